//! Serving credentials: a CA and a serving certificate (generated at first start and kept in
//! the data dir), the admin bearer token, and client certificates signed by the same CA.
//!
//! The server asks every client for a certificate but does not require one: a client that
//! presents one signed by the CA is the user its subject names (CN = user, O = groups), as with
//! upstream's `--client-ca-file`; others authenticate with a bearer token.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// Errors while preparing credentials.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Reading or writing a credential file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Certificate generation or parsing failed.
    #[error("certificate: {0}")]
    Cert(#[from] rcgen::Error),
    /// The TLS configuration could not be built.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// A stored PEM file is unusable.
    #[error("{0}")]
    Pem(String),
}

/// The credentials a server runs with.
pub struct Credentials {
    /// The CA certificate (PEM) clients trust.
    pub ca_pem: String,
    /// The CA's private key (PEM), for issuing client certificates.
    pub ca_key_pem: String,
    /// The admin bearer token.
    pub token: String,
    /// The TLS configuration (HTTP/2 and HTTP/1.1 by ALPN).
    pub server_config: Arc<rustls::ServerConfig>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

fn ca_params() -> Result<CertificateParams, TlsError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, "opkit-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2124, 1, 1);
    Ok(params)
}

fn new_ca() -> Result<(String, String), TlsError> {
    let key = KeyPair::generate()?;
    let cert = ca_params()?.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes a file only its owner can read.
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), TlsError> {
    fs::write(path, contents).map_err(io_err(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(io_err(path))?;
    }
    Ok(())
}

/// Loads the CA and token from `dir` (creating them on first start), or makes fresh ones in
/// memory when `dir` is `None`. A new serving certificate for `hosts` is issued at every start.
pub fn credentials(dir: Option<&Path>, hosts: &[String]) -> Result<Credentials, TlsError> {
    let (ca_pem, ca_key_pem, token) = match dir {
        None => {
            let (c, k) = new_ca()?;
            (c, k, random_token())
        }
        Some(dir) => {
            let ca_path = dir.join("ca.crt");
            let key_path = dir.join("ca.key");
            let token_path = dir.join("admin.token");
            let (c, k) = if ca_path.exists() && key_path.exists() {
                (
                    fs::read_to_string(&ca_path).map_err(io_err(&ca_path))?,
                    fs::read_to_string(&key_path).map_err(io_err(&key_path))?,
                )
            } else {
                let (c, k) = new_ca()?;
                write_private(&key_path, &k)?;
                fs::write(&ca_path, &c).map_err(io_err(&ca_path))?;
                (c, k)
            };
            let token = if token_path.exists() {
                fs::read_to_string(&token_path)
                    .map_err(io_err(&token_path))?
                    .trim()
                    .to_string()
            } else {
                let t = random_token();
                write_private(&token_path, &t)?;
                t
            };
            (c, k, token)
        }
    };
    let ca_key = KeyPair::from_pem(&ca_key_pem)?;
    // The CA's subject is fixed, so its parameters and its key are all signing needs.
    let issuer = Issuer::new(ca_params()?, ca_key);
    let serving_key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, "opkit-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2124, 1, 1);
    let mut sans = vec![
        SanType::DnsName("localhost".try_into()?),
        SanType::DnsName("kubernetes".try_into()?),
        SanType::DnsName("kubernetes.default.svc".try_into()?),
        SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
        SanType::IpAddress(std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST)),
    ];
    for h in hosts {
        match h.parse::<std::net::IpAddr>() {
            Ok(ip) if !ip.is_unspecified() => sans.push(SanType::IpAddress(ip)),
            Ok(_) => {}
            Err(_) => sans.push(SanType::DnsName(h.as_str().try_into()?)),
        }
    }
    params.subject_alt_names = sans;
    let serving = params.signed_by(&serving_key, &issuer)?;
    let cert_der = serving.der().clone();
    let key_der = rustls::pki_types::PrivateKeyDer::try_from(serving_key.serialize_der())
        .map_err(|e| TlsError::Pem(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_der(&ca_pem)?)?;
    let client_verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| TlsError::Pem(format!("client certificate verifier: {e}")))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(vec![cert_der], key_der)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Credentials {
        ca_pem,
        ca_key_pem,
        token,
        server_config: Arc::new(config),
    })
}

fn ca_der(ca_pem: &str) -> Result<rustls::pki_types::CertificateDer<'static>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes())
        .map_err(|e| TlsError::Pem(format!("ca.crt: {e}")))
}

/// A client certificate and its private key, both PEM.
pub struct ClientCertificate {
    /// The certificate.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

/// Issues a client certificate for `user` in `groups` (CN = user, O = groups), valid for
/// `valid_for`, signed by the CA whose key is `ca_key_pem`.
///
/// A certificate carries at most two groups: the certificate library writes each subject
/// attribute type once, and the second group rides on the same `O` attribute under its
/// object identifier. More groups are refused with [`TlsError::Pem`]; bind roles to the user
/// instead.
pub fn issue_client_certificate(
    ca_key_pem: &str,
    user: &str,
    groups: &[String],
    valid_for: std::time::Duration,
) -> Result<ClientCertificate, TlsError> {
    if user.is_empty() {
        return Err(TlsError::Pem(
            "a client certificate needs a user name".into(),
        ));
    }
    if groups.len() > 2 {
        return Err(TlsError::Pem(format!(
            "a client certificate carries at most 2 groups, {} given; bind roles to the user instead",
            groups.len()
        )));
    }
    let issuer = Issuer::new(ca_params()?, KeyPair::from_pem(ca_key_pem)?);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, user);
    let organization = [
        DnType::OrganizationName,
        DnType::CustomDnType(vec![2, 5, 4, 10]),
    ];
    for (ty, group) in organization.into_iter().zip(groups) {
        params.distinguished_name.push(ty, group.as_str());
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let now = time_now();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + valid_for;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(ClientCertificate {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn time_now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

/// Who a kubeconfig acts as.
pub enum KubeconfigUser<'a> {
    /// A bearer token (the admin's or a service account's).
    Token(&'a str),
    /// A client certificate and key (PEM).
    Certificate(&'a ClientCertificate),
}

/// A kubeconfig for `server_url`, trusting `ca_pem`, acting as `user` under the name
/// `user_name`.
pub fn kubeconfig_for(
    server_url: &str,
    ca_pem: &str,
    user_name: &str,
    user: KubeconfigUser<'_>,
    namespace: &str,
) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let ca = b64(ca_pem);
    let credentials = match user {
        KubeconfigUser::Token(token) => format!("    token: {token}\n"),
        KubeconfigUser::Certificate(c) => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&c.cert_pem),
            b64(&c.key_pem)
        ),
    };
    let user_name = serde_json::Value::from(user_name).to_string();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: opkit\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {ca}\nusers:\n- name: {user_name}\n  user:\n{credentials}contexts:\n- name: opkit\n  context:\n    cluster: opkit\n    user: {user_name}\n    namespace: {namespace}\ncurrent-context: opkit\npreferences: {{}}\n"
    )
}

/// A kubeconfig for the admin user.
pub fn kubeconfig(server_url: &str, ca_pem: &str, token: &str) -> String {
    kubeconfig_for(
        server_url,
        ca_pem,
        "opkit-admin",
        KubeconfigUser::Token(token),
        "default",
    )
}
