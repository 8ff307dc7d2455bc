//! Serving credentials: a CA and a serving certificate (generated at first start and kept in
//! the data dir), and the admin bearer token.

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

fn write_private(path: &Path, contents: &str) -> Result<(), TlsError> {
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
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert_der], key_der)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Credentials {
        ca_pem,
        token,
        server_config: Arc::new(config),
    })
}

/// A kubeconfig for the admin user.
pub fn kubeconfig(server_url: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: opkit\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {ca}\nusers:\n- name: opkit-admin\n  user:\n    token: {token}\ncontexts:\n- name: opkit\n  context:\n    cluster: opkit\n    user: opkit-admin\n    namespace: default\ncurrent-context: opkit\npreferences: {{}}\n"
    )
}
