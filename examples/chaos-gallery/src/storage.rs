//! Storage deleted only when a transient "terminating" state is seen (unobserved). Each db
//! (app) gets a storage (`<db>-storage`, labelled with its db) and is marked `storage=ready`;
//! the storage must go when the db goes.
//!
//! The bug: the storage is deleted when the operator sees the db annotated
//! `phase=terminating`, the state its users set right before deleting it. That state is
//! short-lived: a watch that falls behind and relists never shows it, and the storage leaks.
//! The fix: the storage also goes on the db's deletion, and after each (re)list every storage
//! whose db is gone is collected.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use kube::runtime::watcher::Event;
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::common::{annotation, api_of, config_map, create_if_missing, delete_if_present, merge};

/// The label that ties a storage to its db.
const STORAGE_OF: &str = "gallery.opkit.dev/storage-of";

pub(crate) async fn handle(
    client: Client,
    event: Event<ConfigMap>,
    fixed: bool,
) -> anyhow::Result<()> {
    match event {
        Event::Apply(db) | Event::InitApply(db) => {
            let api = api_of(&client, &db);
            let storage = format!("{}-storage", db.name_any());
            if annotation(&db, "phase") == Some("terminating") {
                delete_if_present(&api, &storage, &DeleteParams::default()).await?;
            } else if annotation(&db, "storage") != Some("ready") {
                let mut cm = config_map(&storage, &[], &[]);
                cm.labels_mut()
                    .insert(STORAGE_OF.to_string(), db.name_any());
                create_if_missing(&api, &cm).await?;
                merge(
                    &api,
                    &db.name_any(),
                    json!({"metadata": {"annotations": {"storage": "ready"}}}),
                )
                .await?;
            }
        }
        Event::Delete(db) if fixed => {
            let storage = format!("{}-storage", db.name_any());
            delete_if_present(&api_of(&client, &db), &storage, &DeleteParams::default()).await?;
        }
        Event::InitDone if fixed => {
            let all: Api<ConfigMap> = Api::all(client.clone());
            for storage in all.list(&ListParams::default().labels(STORAGE_OF)).await? {
                let api = api_of(&client, &storage);
                let db = storage
                    .labels()
                    .get(STORAGE_OF)
                    .cloned()
                    .unwrap_or_default();
                if api.get_opt(&db).await?.is_none() {
                    delete_if_present(&api, &storage.name_any(), &DeleteParams::default()).await?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}
