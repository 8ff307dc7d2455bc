//! Every bundle an extension installs is kept as a numbered revision, so a rollback knows what
//! it goes back to and a pending upgrade can say what it changes.
//!
//! A revision is one `Secret` in the extension's namespace (as Helm keeps a release's
//! revisions), named `opkit.extension.EXT.vN`, of type [`SECRET_TYPE`], labelled with the
//! extension ([`EXTENSION_LABEL`]) and its number ([`REVISION_LABEL`]) and owned by the
//! extension. Its one data key holds the [`Revision`] as gzipped JSON: the bundle, its image,
//! its catalog, when it was installed and the rendered objects. Why a Secret: it lives on the
//! cluster, so the history survives a controller restart and any process reads it with one
//! labelled list; rendered objects may carry secrets of the bundle; gzip keeps a bundle's
//! objects well under the 1 MiB an object may hold. Why not the status: a status is rebuilt
//! from observation and must not be the only copy of history.

use std::io::{Read, Write};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{BundleMetadata, ClusterExtension};

/// The label naming the extension a revision belongs to.
pub const EXTENSION_LABEL: &str = "opkit.dev/extension";
/// The label holding a revision's number.
pub const REVISION_LABEL: &str = "opkit.dev/revision";
/// The type of revision Secrets.
pub const SECRET_TYPE: &str = "opkit.dev/extension-revision";
/// The data key of the gzipped JSON.
const DATA_KEY: &str = "revision.json.gz";

/// One installed bundle of an extension.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    /// 1 for the first install, one more for each bundle installed after.
    pub number: u32,
    /// The bundle.
    pub bundle: BundleMetadata,
    /// The bundle image it was pulled from.
    pub image: String,
    /// The catalog it resolved from.
    pub catalog: String,
    /// When it was installed (RFC 3339).
    pub installed_at: String,
    /// The objects it rendered to and applied.
    pub objects: Vec<Value>,
}

/// Why revisions could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// The API call failed.
    #[error("cannot {action} the revisions of extension {extension}: {source}")]
    Api {
        /// What was being done.
        action: &'static str,
        /// The extension.
        extension: String,
        /// Why.
        source: kube::Error,
    },
    /// The revision could not be encoded.
    #[error("cannot encode a revision of extension {extension}: {source}")]
    Encode {
        /// The extension.
        extension: String,
        /// Why.
        source: serde_json::Error,
    },
    /// A revision Secret does not hold a revision.
    #[error("Secret {namespace}/{name} is not a readable revision: {reason}")]
    Unreadable {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// The name of revision `number` of `extension`'s Secret.
pub fn secret_name(extension: &str, number: u32) -> String {
    format!("opkit.extension.{extension}.v{number}")
}

/// The revisions of `extension` kept in `namespace`, oldest first.
pub async fn list(
    client: &Client,
    namespace: &str,
    extension: &str,
) -> Result<Vec<Revision>, RevisionError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secrets = api
        .list(&ListParams::default().labels(&format!("{EXTENSION_LABEL}={extension}")))
        .await
        .map_err(|source| RevisionError::Api {
            action: "list",
            extension: extension.to_string(),
            source,
        })?;
    let mut revisions = secrets
        .items
        .iter()
        .filter(|s| s.type_.as_deref() == Some(SECRET_TYPE))
        .map(|s| {
            decode(s).map_err(|reason| RevisionError::Unreadable {
                namespace: namespace.to_string(),
                name: s.name_any(),
                reason,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    revisions.sort_by_key(|r| r.number);
    Ok(revisions)
}

/// Keeps `revision` of `ext`, in its namespace, owned by it.
pub(crate) async fn record(
    client: &Client,
    ext: &ClusterExtension,
    revision: &Revision,
) -> Result<(), RevisionError> {
    let name = ext.name_any();
    let api_error = |source| RevisionError::Api {
        action: "write",
        extension: name.clone(),
        source,
    };
    let data = encode(revision).map_err(|source| RevisionError::Encode {
        extension: name.clone(),
        source,
    })?;
    let mut secret = Secret {
        type_: Some(SECRET_TYPE.to_string()),
        data: Some([(DATA_KEY.to_string(), k8s_openapi::ByteString(data))].into()),
        ..Secret::default()
    };
    secret.metadata.name = Some(secret_name(&name, revision.number));
    secret.metadata.namespace = Some(ext.spec.namespace.clone());
    secret.metadata.labels = Some(
        [
            (EXTENSION_LABEL.to_string(), name.clone()),
            (REVISION_LABEL.to_string(), revision.number.to_string()),
        ]
        .into(),
    );
    secret.metadata.owner_references = ext.owner_ref(&()).map(|o| vec![o]);
    let api: Api<Secret> = Api::namespaced(client.clone(), &ext.spec.namespace);
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(()),
        // Written before a restart that lost the status write: the revision is kept.
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(api_error(e)),
    }
}

/// Deletes every revision of `ext`.
pub(crate) async fn delete_all(
    client: &Client,
    ext: &ClusterExtension,
) -> Result<(), RevisionError> {
    let name = ext.name_any();
    let api: Api<Secret> = Api::namespaced(client.clone(), &ext.spec.namespace);
    match api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&format!("{EXTENSION_LABEL}={name}")),
        )
        .await
    {
        Ok(_) => Ok(()),
        // The namespace is gone, and the revisions with it.
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(RevisionError::Api {
            action: "delete",
            extension: name,
            source,
        }),
    }
}

/// A new revision numbered after `latest`, installed now.
pub(crate) fn next(
    latest: Option<&Revision>,
    bundle: BundleMetadata,
    image: &str,
    catalog: &str,
    objects: &[Value],
) -> Revision {
    Revision {
        number: latest.map_or(1, |r| r.number + 1),
        bundle,
        image: image.to_string(),
        catalog: catalog.to_string(),
        installed_at: Timestamp::now().to_string(),
        objects: objects.to_vec(),
    }
}

fn encode(revision: &Revision) -> Result<Vec<u8>, serde_json::Error> {
    let json = serde_json::to_vec(revision)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    gz.write_all(&json).map_err(serde_json::Error::io)?;
    gz.finish().map_err(serde_json::Error::io)
}

fn decode(secret: &Secret) -> Result<Revision, String> {
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(DATA_KEY))
        .ok_or_else(|| format!("no data key {DATA_KEY}"))?;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(data.0.as_slice())
        .read_to_end(&mut json)
        .map_err(|e| format!("{DATA_KEY} is not gzip: {e}"))?;
    serde_json::from_slice(&json).map_err(|e| format!("{DATA_KEY}: {e}"))
}

/// `Kind name` or `Kind namespace/name`, for messages and change lists.
pub(crate) fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// What replacing `old` objects by `new` ones does: (added, removed, changed), each sorted.
pub(crate) fn diff(old: &[Value], new: &[Value]) -> (Vec<String>, Vec<String>, Vec<String>) {
    use std::collections::BTreeMap;
    let index = |objects: &[Value]| -> BTreeMap<String, Value> {
        objects
            .iter()
            .map(|o| {
                let key = format!(
                    "{} {}",
                    o["apiVersion"].as_str().unwrap_or_default(),
                    describe(o)
                );
                (key, o.clone())
            })
            .collect()
    };
    let (old, new) = (index(old), index(new));
    let label = |key: &String| {
        key.split_once(' ')
            .map_or(key.clone(), |(_, d)| d.to_string())
    };
    let added = new
        .keys()
        .filter(|k| !old.contains_key(*k))
        .map(label)
        .collect();
    let removed = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .map(label)
        .collect();
    let changed = new
        .iter()
        .filter(|(k, v)| old.get(*k).is_some_and(|o| o != *v))
        .map(|(k, _)| label(k))
        .collect();
    (added, removed, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str, level: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns"}, "data": {"level": level}})
    }

    #[test]
    fn a_diff_lists_added_removed_and_changed_objects_by_kind_and_name() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.demo.example.com"}});
        let old = vec![crd.clone(), cm("a", "info"), cm("b", "info")];
        let new = vec![crd, cm("b", "debug"), cm("c", "info")];
        let (added, removed, changed) = diff(&old, &new);
        assert_eq!(added, ["ConfigMap ns/c"]);
        assert_eq!(removed, ["ConfigMap ns/a"]);
        assert_eq!(changed, ["ConfigMap ns/b"]);
    }

    #[test]
    fn a_revision_round_trips_through_its_secret_data() {
        let revision = next(
            None,
            BundleMetadata {
                name: "demo.v1.0.0".into(),
                version: "1.0.0".into(),
            },
            "r/demo:v1",
            "ops",
            &[cm("a", "info")],
        );
        assert_eq!(revision.number, 1);
        let secret = Secret {
            data: Some(
                [(
                    DATA_KEY.to_string(),
                    k8s_openapi::ByteString(encode(&revision).unwrap()),
                )]
                .into(),
            ),
            ..Secret::default()
        };
        assert_eq!(decode(&secret).unwrap(), revision);
        assert_eq!(
            next(Some(&revision), revision.bundle.clone(), "", "", &[]).number,
            2
        );
        assert!(decode(&Secret::default()).unwrap_err().contains(DATA_KEY));
    }
}
