//! Self-managed webhook certificates: a CA and a serving certificate in a Secret, the CA
//! published as `caBundle` of the operator's webhook configurations and of its CRDs'
//! conversion webhooks, renewed before expiry.
//!
//! The API server trusts a webhook only through the configuration's `caBundle`, so whoever
//! issues the serving certificate must also write that field; kubebuilder leaves both to
//! cert-manager. Here the operator does it itself: the Secret is the single source of truth
//! shared by every replica (written with optimistic concurrency, so replicas racing at start
//! end up serving the same certificate), and each replica re-reads it periodically, so a
//! renewal by one replica reaches the others.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use serde_json::{Value, json};

use super::SelfManagedCerts;
use crate::error::{Error, Result};

const CA_CRT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const CA_PREVIOUS: &str = "ca.previous.crt";
const TLS_CRT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";

fn fail(what: impl std::fmt::Display) -> Error {
    Error::WebhookCerts(what.to_string())
}

/// The PEMs of one generation of certificates, as stored in the Secret.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bundle {
    pub(crate) ca_pem: String,
    ca_key_pem: String,
    /// The CA replaced by the last CA renewal, while still valid: kept in `caBundle` so the
    /// API server trusts replicas still serving a certificate it signed.
    previous_ca_pem: Option<String>,
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

impl Bundle {
    /// What goes into `caBundle`: the CA, then the previous one if any.
    pub(crate) fn ca_bundle(&self) -> Vec<u8> {
        let mut out = self.ca_pem.clone().into_bytes();
        if let Some(prev) = &self.previous_ca_pem {
            out.extend_from_slice(prev.as_bytes());
        }
        out
    }

    fn from_secret(secret: &Secret) -> Option<Bundle> {
        let data = secret.data.as_ref()?;
        let get = |k: &str| {
            data.get(k)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
        };
        Some(Bundle {
            ca_pem: get(CA_CRT)?,
            ca_key_pem: get(CA_KEY)?,
            previous_ca_pem: get(CA_PREVIOUS),
            cert_pem: get(TLS_CRT)?,
            key_pem: get(TLS_KEY)?,
        })
    }

    fn data(&self) -> BTreeMap<String, ByteString> {
        let mut data = BTreeMap::new();
        let mut put = |k: &str, v: &str| {
            data.insert(k.to_string(), ByteString(v.as_bytes().to_vec()));
        };
        put(CA_CRT, &self.ca_pem);
        put(CA_KEY, &self.ca_key_pem);
        put(TLS_CRT, &self.cert_pem);
        put(TLS_KEY, &self.key_pem);
        if let Some(prev) = &self.previous_ca_pem {
            put(CA_PREVIOUS, prev);
        }
        data
    }

    /// The serving certificate and key for rustls.
    pub(crate) fn certified_key(&self) -> Result<Arc<CertifiedKey>> {
        certified_key(&self.cert_pem, &self.key_pem)
    }
}

/// A rustls certificate and signing key from PEMs.
pub(crate) fn certified_key(cert_pem: &str, key_pem: &str) -> Result<Arc<CertifiedKey>> {
    let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| fail(format!("tls.crt: {e}")))?;
    if certs.is_empty() {
        return Err(fail("tls.crt holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| fail(format!("tls.key: {e}")))?;
    let key = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| fail(format!("tls.key: {e}")))?;
    Ok(Arc::new(CertifiedKey::new(certs, key)))
}

/// The validity period of the first certificate in `pem`.
fn validity(pem: &str) -> Result<(SystemTime, SystemTime)> {
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(fail)?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).map_err(fail)?;
    let at = |t: x509_parser::time::ASN1Time| {
        UNIX_EPOCH + Duration::from_secs(t.timestamp().max(0) as u64)
    };
    Ok((
        at(cert.validity().not_before),
        at(cert.validity().not_after),
    ))
}

/// Whether the certificate in `pem` is in the last third of its life (or unreadable).
fn due(pem: &str, now: SystemTime) -> bool {
    match validity(pem) {
        Ok((from, until)) => {
            let life = until.duration_since(from).unwrap_or_default();
            until.duration_since(now).unwrap_or_default() < life / 3
        }
        Err(_) => true,
    }
}

/// Whether the serving certificate names every DNS name in `names`.
fn covers(pem: &str, names: &[String]) -> bool {
    let Ok(der) = CertificateDer::from_pem_slice(pem.as_bytes()) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
        return false;
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return false;
    };
    let have: Vec<&str> = san
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => Some(*d),
            _ => None,
        })
        .collect();
    names.iter().all(|n| have.contains(&n.as_str()))
}

fn ca_params(valid_for: Duration) -> Result<CertificateParams> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca.distinguished_name
        .push(DnType::CommonName, "opkit-webhook-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = time::OffsetDateTime::now_utc();
    ca.not_before = now - time::Duration::minutes(5);
    ca.not_after = now + valid_for;
    Ok(ca)
}

fn new_ca(valid_for: Duration) -> Result<(String, String)> {
    let key = KeyPair::generate().map_err(fail)?;
    let cert = ca_params(valid_for)?.self_signed(&key).map_err(fail)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A serving certificate for `names`, signed by the CA whose key is `ca_key_pem`. The
/// issuer is rebuilt from the CA's distinguished name and key, which is all signing uses.
fn issue(ca_key_pem: &str, names: &[String], valid_for: Duration) -> Result<(String, String)> {
    let issuer = Issuer::new(
        ca_params(valid_for)?,
        KeyPair::from_pem(ca_key_pem).map_err(fail)?,
    );
    let key = KeyPair::generate().map_err(fail)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    params
        .distinguished_name
        .push(DnType::CommonName, names[0].as_str());
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.subject_alt_names = names
        .iter()
        .map(|n| Ok(SanType::DnsName(n.as_str().try_into().map_err(fail)?)))
        .collect::<Result<_>>()?;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + valid_for;
    let cert = params.signed_by(&key, &issuer).map_err(fail)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// What `current` should become: `None` when it is fine as it is.
fn renew(current: Option<&Bundle>, config: &SelfManagedCerts) -> Result<Option<Bundle>> {
    let now = SystemTime::now();
    let names = config.dns_names();
    let ca_due = current.is_none_or(|b| due(&b.ca_pem, now));
    let cert_due =
        ca_due || current.is_none_or(|b| due(&b.cert_pem, now) || !covers(&b.cert_pem, &names));
    if !cert_due {
        return Ok(None);
    }
    let (ca_pem, ca_key_pem, previous_ca_pem) = match current {
        Some(b) if !ca_due => (
            b.ca_pem.clone(),
            b.ca_key_pem.clone(),
            b.previous_ca_pem.clone(),
        ),
        _ => {
            let (pem, key) = new_ca(config.ca_validity)?;
            let previous = current
                .map(|b| b.ca_pem.clone())
                .filter(|p| validity(p).is_ok_and(|(_, until)| until > now));
            (pem, key, previous)
        }
    };
    let (cert_pem, key_pem) = issue(&ca_key_pem, &names, config.cert_validity)?;
    Ok(Some(Bundle {
        ca_pem,
        ca_key_pem,
        previous_ca_pem,
        cert_pem,
        key_pem,
    }))
}

/// Reads the Secret, creating or renewing what it holds if needed, and returns the
/// certificates every replica should serve. A write conflict (another replica got there
/// first) re-reads and takes the winner's.
pub(crate) async fn ensure(client: &Client, config: &SelfManagedCerts) -> Result<Bundle> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    for _ in 0..5 {
        let existing = api.get_opt(&config.secret).await.map_err(|e| {
            fail(format!(
                "reading Secret {}/{}: {e}",
                config.namespace, config.secret
            ))
        })?;
        let current = existing.as_ref().and_then(Bundle::from_secret);
        let Some(next) = renew(current.as_ref(), config)? else {
            // `renew` returns None only for a present bundle.
            return current.ok_or_else(|| fail("internal: no certificates and none issued"));
        };
        let written = match existing {
            None => {
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(config.secret.clone()),
                        namespace: Some(config.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    type_: Some("kubernetes.io/tls".into()),
                    data: Some(next.data()),
                    ..Secret::default()
                };
                api.create(&PostParams::default(), &secret).await
            }
            Some(mut secret) => {
                secret.data = Some(next.data());
                api.replace(&config.secret, &PostParams::default(), &secret)
                    .await
            }
        };
        match written {
            Ok(_) => {
                tracing::info!(secret = %config.secret, namespace = %config.namespace,
                    "webhook certificates issued");
                return Ok(next);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => {
                return Err(fail(format!(
                    "writing Secret {}/{}: {e}",
                    config.namespace, config.secret
                )));
            }
        }
    }
    Err(fail(format!(
        "Secret {}/{} kept changing while writing it",
        config.namespace, config.secret
    )))
}

/// Writes `ca_bundle` into every webhook of the named configurations, and into the conversion
/// webhook of the named CRDs, where it is missing or stale. One that does not exist yet (or a
/// CRD without webhook conversion) is reported (it is retried on the next round); a
/// concurrent change of one is retried at once, guarded by its resourceVersion.
pub(crate) async fn publish(
    client: &Client,
    config: &SelfManagedCerts,
    ca_bundle: &[u8],
) -> Result<()> {
    let mut missing = Vec::new();
    // A merge patch replaces the webhooks list whole.
    let webhooks = |body: Value| json!({"webhooks": body["webhooks"]});
    for name in &config.mutating {
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        let found = patch_bundles(&api, name, ca_bundle, webhooks, |c| {
            c.webhooks
                .iter_mut()
                .flatten()
                .map(|w| &mut w.client_config.ca_bundle)
                .collect()
        })
        .await?;
        if found.is_none() {
            missing.push(format!("MutatingWebhookConfiguration {name} not found"));
        }
    }
    for name in &config.validating {
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let found = patch_bundles(&api, name, ca_bundle, webhooks, |c| {
            c.webhooks
                .iter_mut()
                .flatten()
                .map(|w| &mut w.client_config.ca_bundle)
                .collect()
        })
        .await?;
        if found.is_none() {
            missing.push(format!("ValidatingWebhookConfiguration {name} not found"));
        }
    }
    for name in &config.crds {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let conversion = |body: Value| {
            let bundle = &body["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"];
            json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}})
        };
        let found = patch_bundles(&api, name, ca_bundle, conversion, |crd| {
            crd.spec
                .conversion
                .as_mut()
                .filter(|c| c.strategy == "Webhook")
                .and_then(|c| c.webhook.as_mut())
                .and_then(|w| w.client_config.as_mut())
                .map(|c| &mut c.ca_bundle)
                .into_iter()
                .collect()
        })
        .await?;
        match found {
            None => missing.push(format!("CustomResourceDefinition {name} not found")),
            Some(0) => missing.push(format!(
                "CustomResourceDefinition {name} has no webhook conversion \
                 (spec.conversion.strategy Webhook with a clientConfig)"
            )),
            Some(_) => {}
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(fail(format!(
            "cannot publish caBundle: {}",
            missing.join(", ")
        )))
    }
}

/// Sets the `caBundle` fields `bundles` finds in the object `name` and patches what
/// `changed_part` takes of the result (a merge patch, guarded by the resourceVersion so it
/// fails instead of overwriting a concurrent edit). Returns how many fields the object has,
/// or `None` if it does not exist.
async fn patch_bundles<C>(
    api: &Api<C>,
    name: &str,
    ca_bundle: &[u8],
    changed_part: impl Fn(Value) -> Value,
    bundles: impl Fn(&mut C) -> Vec<&mut Option<ByteString>>,
) -> Result<Option<usize>>
where
    C: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    for _ in 0..5 {
        let Some(mut object) = api
            .get_opt(name)
            .await
            .map_err(|e| fail(format!("reading {name}: {e}")))?
        else {
            return Ok(None);
        };
        let mut found = 0;
        let mut changed = false;
        for bundle in bundles(&mut object) {
            found += 1;
            if bundle.as_ref().map(|b| b.0.as_slice()) != Some(ca_bundle) {
                *bundle = Some(ByteString(ca_bundle.to_vec()));
                changed = true;
            }
        }
        if !changed {
            return Ok(Some(found));
        }
        let resource_version = object.meta().resource_version.clone();
        let mut patch = changed_part(serde_json::to_value(&object).map_err(fail)?);
        patch["metadata"] = json!({"resourceVersion": resource_version});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(object = name, "webhook caBundle published");
                return Ok(Some(found));
            }
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(fail(format!("patching caBundle of {name}: {e}"))),
        }
    }
    Err(fail(format!(
        "{name} kept changing while patching its caBundle"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SelfManagedCerts {
        SelfManagedCerts::new("hooks", "ops")
    }

    #[test]
    fn a_fresh_bundle_is_issued_then_kept() {
        let first = renew(None, &config()).unwrap().expect("issued");
        assert!(covers(&first.cert_pem, &["hooks.ops.svc".to_string()]));
        assert!(first.certified_key().is_ok());
        assert!(
            renew(Some(&first), &config()).unwrap().is_none(),
            "still fresh"
        );
    }

    #[test]
    fn another_service_name_reissues_the_certificate_under_the_same_ca() {
        let first = renew(None, &config()).unwrap().unwrap();
        let other = SelfManagedCerts::new("other", "ops");
        let second = renew(Some(&first), &other).unwrap().expect("reissued");
        assert_eq!(second.ca_pem, first.ca_pem);
        assert!(covers(&second.cert_pem, &["other.ops.svc".to_string()]));
    }

    #[test]
    fn a_certificate_in_the_last_third_of_its_life_is_renewed() {
        let short = config().cert_validity(Duration::from_secs(30));
        let b = renew(None, &short).unwrap().unwrap();
        // Issued 5 minutes back-dated: 30 s of life left out of 5.5 min.
        assert!(due(&b.cert_pem, SystemTime::now()));
        let renewed = renew(Some(&b), &short).unwrap().expect("renewed");
        assert_eq!(renewed.ca_pem, b.ca_pem, "the CA is kept");
        assert_ne!(renewed.cert_pem, b.cert_pem);
    }

    #[test]
    fn a_renewed_ca_keeps_the_previous_one_in_the_bundle() {
        let short = config().ca_validity(Duration::from_secs(30));
        let b = renew(None, &short).unwrap().unwrap();
        let renewed = renew(Some(&b), &short).unwrap().expect("renewed");
        assert_ne!(renewed.ca_pem, b.ca_pem);
        let bundle = String::from_utf8(renewed.ca_bundle()).unwrap();
        assert!(bundle.contains(&renewed.ca_pem) && bundle.contains(&b.ca_pem));
    }
}
