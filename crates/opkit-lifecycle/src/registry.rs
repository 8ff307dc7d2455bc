//! Moves OLM images to and from OCI registries (oci-client), for `opkit bundle|catalog
//! push|pull` and for the `ClusterCatalog` controller alike (one client, here, so both reach
//! registries the same way). What the images hold is `opkit_olm::image`'s business; this
//! module only speaks the distribution protocol — the reference, the scheme (plain HTTP for
//! loopback registries and under `--plain-http`), the credentials (anonymous, or basic auth from
//! the Docker config file) — and turns the client's errors into ones that say what to do.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use base64::Engine;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use opkit_olm::image::{self, Image};

/// One image reference and how to reach its registry.
pub struct Registry {
    client: Client,
    reference: Reference,
    auth: RegistryAuth,
    plain_http: bool,
}

/// A pulled image: its config and its layers (media type, bytes), base first.
pub struct Pulled {
    /// The manifest digest.
    pub digest: String,
    /// The image config.
    pub config: Vec<u8>,
    /// The layers (media type, bytes), base first.
    pub layers: Vec<(String, Vec<u8>)>,
}

impl Pulled {
    /// The layers as `opkit_olm::image` reads them.
    pub fn layers(&self) -> Vec<image::Layer<'_>> {
        self.layers
            .iter()
            .map(|(media_type, data)| image::Layer { media_type, data })
            .collect()
    }
}

impl Registry {
    /// The registry of `image_ref`; plain HTTP when `plain_http` or the registry is on a
    /// loopback address, HTTPS otherwise.
    pub fn new(image_ref: &str, plain_http: bool) -> anyhow::Result<Registry> {
        let reference: Reference = image_ref.parse().with_context(|| {
            format!(
                "{image_ref:?} is not an image reference (host[:port]/repository[:tag|@digest])"
            )
        })?;
        // reqwest's rustls needs a process-wide crypto provider; another one may already be set.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let plain_http = plain_http || is_loopback(reference.resolve_registry());
        let protocol = if plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let auth = docker_config_auth(&reference)?;
        let client = Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            ..ClientConfig::default()
        });
        Ok(Registry {
            client,
            reference,
            auth,
            plain_http,
        })
    }

    /// The image's reference pinned to `digest` (`registry/repository@digest`): what was
    /// pulled, whatever the tag points to later.
    pub fn pinned(&self, digest: &str) -> String {
        Reference::with_digest(
            self.reference.registry().to_string(),
            self.reference.repository().to_string(),
            digest.to_string(),
        )
        .whole()
    }

    /// Pushes `image` and returns its manifest digest, as the registry reports it.
    pub async fn push(&self, image: &Image) -> anyhow::Result<String> {
        let layer = ImageLayer::new(
            image.layer.clone(),
            image::LAYER_MEDIA_TYPE.to_string(),
            None,
        );
        let config = Config::new(
            image.config.clone(),
            image::CONFIG_MEDIA_TYPE.to_string(),
            None,
        );
        let layers = [layer];
        // The manifest names its media type, as docker's and opm's do (the client leaves it out).
        let mut manifest = OciImageManifest::build(&layers, &config, None);
        manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
        self.client
            .push(&self.reference, &layers, config, &self.auth, Some(manifest))
            .await
            .map_err(|e| self.explain(e, "push"))?;
        self.client
            .fetch_manifest_digest(&self.reference, &self.auth)
            .await
            .map_err(|e| self.explain(e, "read back the digest of"))
    }

    /// Pulls the image: its config and layers.
    pub async fn pull(&self) -> anyhow::Result<Pulled> {
        let data = self
            .client
            .pull(
                &self.reference,
                &self.auth,
                image::READABLE_LAYER_MEDIA_TYPES.to_vec(),
            )
            .await
            .map_err(|e| self.explain(e, "pull"))?;
        Ok(Pulled {
            digest: data.digest.unwrap_or_default(),
            config: data.config.data.to_vec(),
            layers: data
                .layers
                .into_iter()
                .map(|l| (l.media_type, l.data.to_vec()))
                .collect(),
        })
    }

    /// The client's error, with what it means for this reference and what to do about it.
    fn explain(&self, error: OciDistributionError, action: &str) -> anyhow::Error {
        let reference = self.reference.whole();
        let registry = self.reference.resolve_registry().to_string();
        let message = match &error {
            OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => {
                let hint = if self.plain_http {
                    "is it running?"
                } else {
                    "is it running? one without TLS needs --plain-http"
                };
                format!(
                    "cannot {action} {reference}: the registry {registry} is unreachable ({hint})"
                )
            }
            OciDistributionError::ImageManifestNotFoundError(_) => {
                format!("cannot {action} {reference}: no such image (unknown repository or tag)")
            }
            OciDistributionError::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|e| {
                    matches!(
                        e.code,
                        OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
                    )
                }) =>
            {
                format!("cannot {action} {reference}: no such image (unknown repository or tag)")
            }
            OciDistributionError::ServerError { code: 404, .. } => {
                format!("cannot {action} {reference}: no such image (unknown repository or tag)")
            }
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => format!(
                "cannot {action} {reference}: the registry {registry} refused the credentials (set them in ~/.docker/config.json or the file REGISTRY_AUTH_FILE names)"
            ),
            OciDistributionError::IncompatibleLayerMediaTypeError(t) => format!(
                "cannot {action} {reference}: a layer has media type {t}, not a tar layer of a bundle or catalog image"
            ),
            _ => format!("cannot {action} {reference} (registry {registry})"),
        };
        anyhow::Error::new(error).context(message)
    }
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => registry.split(':').next().unwrap_or_default(),
    };
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Basic auth for the reference's registry from the Docker config file (`REGISTRY_AUTH_FILE`,
/// else `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`); anonymous when there is no
/// file or no entry. Credential helpers are not run.
fn docker_config_auth(reference: &Reference) -> anyhow::Result<RegistryAuth> {
    let path = match (
        std::env::var_os("REGISTRY_AUTH_FILE"),
        std::env::var_os("DOCKER_CONFIG"),
        std::env::var_os("HOME"),
    ) {
        (Some(file), _, _) => PathBuf::from(file),
        (None, Some(dir), _) => PathBuf::from(dir).join("config.json"),
        (None, None, Some(home)) => PathBuf::from(home).join(".docker/config.json"),
        (None, None, None) => return Ok(RegistryAuth::Anonymous),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => return Err(anyhow!(e).context(format!("cannot read {}", path.display()))),
    };
    auth_from_config(&text, &path, reference)
}

/// The credentials a Docker config file (`text`, read from `path`) holds for the reference's
/// registry: `username` and `password`, or `auth` (base64 of `user:password`).
fn auth_from_config(
    text: &str,
    path: &Path,
    reference: &Reference,
) -> anyhow::Result<RegistryAuth> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        auths: BTreeMap<String, Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        auth: Option<String>,
        username: Option<String>,
        password: Option<String>,
    }
    let file: File = serde_json::from_str(text)
        .with_context(|| format!("{} is not a Docker config file", path.display()))?;
    let wanted = [reference.registry(), reference.resolve_registry()];
    let entry = file.auths.iter().find(|(key, _)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default();
        wanted.contains(&host)
    });
    let Some((key, entry)) = entry else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    let Some(auth) = &entry.auth else {
        return Ok(RegistryAuth::Anonymous);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| {
            s.split_once(':')
                .map(|(u, p)| (u.to_string(), p.to_string()))
        })
        .with_context(|| {
            format!(
                "{}: auths.{key:?}.auth is not base64 of user:password",
                path.display()
            )
        })?;
    Ok(RegistryAuth::Basic(decoded.0, decoded.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_are_recognized_with_and_without_ports() {
        for r in [
            "localhost:5000",
            "localhost",
            "127.0.0.1:41234",
            "[::1]:5000",
        ] {
            assert!(is_loopback(r), "{r}");
        }
        for r in ["quay.io", "registry.example.com:5000", "10.0.0.1:5000"] {
            assert!(!is_loopback(r), "{r}");
        }
    }

    #[test]
    fn docker_config_credentials_are_found_by_registry_host() {
        let path = Path::new("config.json");
        let config = r#"{"auths": {
            "localhost:5000": {"auth": "dTpw"},
            "https://index.docker.io/v1/": {"username": "hub", "password": "secret"},
            "quay.io": {}
        }}"#;
        let auth = |r: &str| auth_from_config(config, path, &r.parse().unwrap()).unwrap();
        assert!(
            auth("localhost:5000/demo/bundle:v1") == RegistryAuth::Basic("u".into(), "p".into())
        );
        assert!(
            auth("docker.io/library/demo:v1") == RegistryAuth::Basic("hub".into(), "secret".into())
        );
        assert!(auth("quay.io/demo/bundle:v1") == RegistryAuth::Anonymous);
        assert!(auth("ghcr.io/demo/bundle:v1") == RegistryAuth::Anonymous);
        let err = auth_from_config(
            r#"{"auths": {"ghcr.io": {"auth": "not base64!"}}}"#,
            path,
            &"ghcr.io/demo/bundle:v1".parse().unwrap(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("is not base64 of user:password"),
            "{err}"
        );
    }
}
