//! Helm's Secrets storage driver (`pkg/storage/driver/secrets.go`): one Secret per revision,
//! named `sh.helm.release.v1.NAME.vREVISION`, of type `helm.sh/release.v1`, whose
//! `data.release` is base64(gzip(JSON release)), labelled `name`, `owner=helm`, `status`,
//! `version`, `createdAt`/`modifiedAt` — exactly what `helm list`/`history`/`status`/`get`
//! read. Creating a revision that exists fails (no operation overwrites another's record),
//! and history is pruned to a maximum, never deleting the deployed revision.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

use crate::release::{Release, Status, Time, sort_by_revision};

/// The Secret type Helm's releases have.
pub const RELEASE_SECRET_TYPE: &str = "helm.sh/release.v1";

/// Why reading or writing a release record failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// `Create` of a revision whose Secret exists (Helm's `ErrReleaseExists`).
    #[error("release: already exists")]
    Exists,
    /// A record that does not decode.
    #[error("failed to decode data {key:?}: {message}")]
    Decode {
        /// The Secret's name.
        key: String,
        /// What went wrong.
        message: String,
    },
    /// The API refused or failed.
    #[error("{action}: {source}")]
    Api {
        /// What was being done (`create`, `update`, `list`, …).
        action: &'static str,
        /// The cause.
        #[source]
        source: Box<kube::Error>,
    },
}

/// The Secret name of a revision (Helm's `makeKey`).
pub fn release_key(name: &str, version: u32) -> String {
    format!("sh.helm.release.v1.{name}.v{version}")
}

/// base64(gzip(JSON)), Helm's `encodeRelease`.
pub fn encode_release(release: &Release) -> Result<String, serde_json::Error> {
    let json = serde_json::to_vec(release)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    gz.write_all(&json).map_err(serde_json::Error::io)?;
    let bytes = gz.finish().map_err(serde_json::Error::io)?;
    Ok(BASE64.encode(bytes))
}

/// Helm's `decodeRelease`: base64, then gunzip when the gzip magic is there, then JSON.
pub fn decode_release(data: &[u8]) -> Result<Release, String> {
    let raw = BASE64.decode(data).map_err(|e| e.to_string())?;
    let json = if raw.starts_with(&[0x1f, 0x8b, 0x08]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        out
    } else {
        raw
    };
    serde_json::from_slice(&json).map_err(|e| e.to_string())
}

/// The releases of one namespace, stored as Helm stores them.
#[derive(Clone)]
pub(crate) struct Storage {
    api: Api<Secret>,
}

impl Storage {
    pub(crate) fn new(client: kube::Client, namespace: &str) -> Storage {
        Storage {
            api: Api::namespaced(client, namespace),
        }
    }

    /// Every revision of `name` that decodes, oldest first.
    pub(crate) async fn history(&self, name: &str) -> Result<Vec<Release>, StorageError> {
        let lp = ListParams::default().labels(&format!("name={name},owner=helm"));
        let list = self
            .api
            .list(&lp)
            .await
            .map_err(|source| StorageError::Api {
                action: "query: failed to query with labels",
                source: Box::new(source),
            })?;
        let mut out = Vec::new();
        for s in list.items {
            // As Helm's driver does, a record that does not decode is skipped (and logged)
            // rather than wedging every operation on the release.
            match decode_secret(&s) {
                Ok(r) => out.push(r),
                Err(e) => tracing::warn!(error = %e, "skipping a release record"),
            }
        }
        sort_by_revision(&mut out);
        Ok(out)
    }

    /// Stores a new revision; fails with [`StorageError::Exists`] if it is there.
    pub(crate) async fn create(&self, release: &Release) -> Result<(), StorageError> {
        let mut labels = BTreeMap::new();
        labels.insert("createdAt".to_string(), now_unix());
        let secret = secret_for(release, labels)?;
        match self.api.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Err(StorageError::Exists),
            Err(source) => Err(StorageError::Api {
                action: "create: failed to create",
                source: Box::new(source),
            }),
        }
    }

    /// Rewrites an existing revision (keeping its `createdAt`), as Helm's `Update` does.
    pub(crate) async fn update(&self, release: &Release) -> Result<(), StorageError> {
        let key = release_key(&release.name, release.version);
        let current = self
            .api
            .get(&key)
            .await
            .map_err(|source| StorageError::Api {
                action: "update: failed to update",
                source: Box::new(source),
            })?;
        let mut labels = BTreeMap::new();
        if let Some(created) = current
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("createdAt"))
        {
            labels.insert("createdAt".to_string(), created.clone());
        }
        labels.insert("modifiedAt".to_string(), now_unix());
        let mut secret = secret_for(release, labels)?;
        secret.metadata.resource_version = current.metadata.resource_version;
        self.api
            .replace(&key, &PostParams::default(), &secret)
            .await
            .map_err(|source| StorageError::Api {
                action: "update: failed to update",
                source: Box::new(source),
            })?;
        Ok(())
    }

    /// Deletes one revision's record (absent is fine).
    pub(crate) async fn delete(&self, name: &str, version: u32) -> Result<(), StorageError> {
        match self
            .api
            .delete(&release_key(name, version), &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(source) => Err(StorageError::Api {
                action: "delete",
                source: Box::new(source),
            }),
        }
    }

    /// Helm's `removeLeastRecent`: deletes the oldest revisions until at most `keep`
    /// remain, never the newest deployed one.
    pub(crate) async fn prune(
        &self,
        history: &[Release],
        keep: usize,
    ) -> Result<usize, StorageError> {
        if history.len() <= keep {
            return Ok(0);
        }
        let deployed = history
            .iter()
            .rev()
            .find(|r| r.status() == Status::Deployed)
            .map(|r| r.version);
        let mut remaining = history.len();
        let mut deleted = 0;
        for r in history {
            if remaining <= keep {
                break;
            }
            if Some(r.version) == deployed {
                continue;
            }
            self.delete(&r.name, r.version).await?;
            remaining -= 1;
            deleted += 1;
        }
        Ok(deleted)
    }
}

fn now_unix() -> String {
    Time::now().unix_seconds().unwrap_or_default().to_string()
}

/// The Secret holding `release` (Helm's `newSecretsObject`), with `extra` labels.
fn secret_for(release: &Release, extra: BTreeMap<String, String>) -> Result<Secret, StorageError> {
    let key = release_key(&release.name, release.version);
    let data = encode_release(release).map_err(|e| StorageError::Decode {
        key: key.clone(),
        message: e.to_string(),
    })?;
    let mut labels = extra;
    labels.insert("name".into(), release.name.clone());
    labels.insert("owner".into(), "helm".into());
    labels.insert("status".into(), release.status().to_string());
    labels.insert("version".into(), release.version.to_string());
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(key),
            labels: Some(labels),
            ..Default::default()
        },
        type_: Some(RELEASE_SECRET_TYPE.into()),
        data: Some(BTreeMap::from([(
            "release".to_string(),
            ByteString(data.into_bytes()),
        )])),
        ..Default::default()
    })
}

fn decode_secret(s: &Secret) -> Result<Release, StorageError> {
    let key = s.metadata.name.clone().unwrap_or_default();
    let data = s
        .data
        .as_ref()
        .and_then(|d| d.get("release"))
        .ok_or_else(|| StorageError::Decode {
            key: key.clone(),
            message: "no data.release".into(),
        })?;
    decode_release(&data.0).map_err(|message| StorageError::Decode { key, message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_gzip_and_base64() {
        let mut r = Release {
            name: "web".into(),
            version: 3,
            namespace: "apps".into(),
            manifest: "---\n# Source: a/templates/cm.yaml\nkind: ConfigMap\n".into(),
            ..Default::default()
        };
        r.set_status(Status::Deployed, "Upgrade complete");
        let data = encode_release(&r).unwrap();
        let gz = BASE64.decode(&data).unwrap();
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 0x08], "gzip magic");
        assert_eq!(decode_release(data.as_bytes()).unwrap(), r);
        // Helm also reads records that are not compressed.
        let plain = BASE64.encode(serde_json::to_vec(&r).unwrap());
        assert_eq!(decode_release(plain.as_bytes()).unwrap(), r);
        assert_eq!(release_key("web", 3), "sh.helm.release.v1.web.v3");
    }
}
