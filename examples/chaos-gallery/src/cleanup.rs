//! Cleanup by child name instead of UID (unobserved). Each app gets a child `<app>-child`
//! that records its app's UID (annotation `owner-uid`); the child goes when its app goes.
//!
//! The bug: the child is known by its name alone. When an app is deleted and created again
//! under the same name while the operator misses the deletion (its watch fell behind and
//! relisted), it takes the old app's child for the new one's: the new app runs with a child
//! that was never made for it. The same confusion deletes by name: a late deletion event
//! would take the new app's child. The fix: a child is the app's only when its `owner-uid` is
//! the app's UID — a stale child is replaced — and a delete is for that UID only (a
//! precondition the server checks).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::watcher::Event;
use kube::{Client, ResourceExt};

use crate::common::{annotation, api_of, config_map, create_if_missing, delete_if_present};

pub(crate) async fn handle(
    client: Client,
    event: Event<ConfigMap>,
    fixed: bool,
) -> anyhow::Result<()> {
    match event {
        Event::Apply(app) | Event::InitApply(app) => {
            let api = api_of(&client, &app);
            let child = format!("{}-child", app.name_any());
            let uid = app.uid().unwrap_or_default();
            if let Some(existing) = api.get_opt(&child).await? {
                if !fixed || annotation(&existing, "owner-uid") == Some(uid.as_str()) {
                    return Ok(());
                }
                delete_if_present(&api, &child, &only(&existing)).await?;
            }
            create_if_missing(
                &api,
                &config_map(&child, &[], &[("owner-uid", uid.as_str())]),
            )
            .await?;
        }
        Event::Delete(app) => {
            let api = api_of(&client, &app);
            let child = format!("{}-child", app.name_any());
            if !fixed {
                delete_if_present(&api, &child, &DeleteParams::default()).await?;
            } else if let Some(existing) = api.get_opt(&child).await?
                && annotation(&existing, "owner-uid") == app.uid().as_deref()
            {
                delete_if_present(&api, &child, &only(&existing)).await?;
            }
        }
        Event::Init | Event::InitDone => {}
    }
    Ok(())
}

/// Delete options that delete `object` and nothing else (a newer object of the same name is
/// refused by the server with 409).
fn only(object: &ConfigMap) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: object.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    }
}
