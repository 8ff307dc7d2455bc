//! What the gallery's operators share: their resource — a ConfigMap labelled
//! `gallery.opkit.dev/bug=<bug>` (the "app": its `data` the spec, its annotations the status)
//! whose children are ConfigMaps too, so a suite needs no CRD — and the two loops that drive
//! them: a poll loop (a level-based reconcile of every app, ten times a second) and a watch
//! (kube-runtime's watcher, its events handed over one at a time).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

/// The label that marks an app and names the operator it is for.
pub(crate) const BUG_LABEL: &str = "gallery.opkit.dev/bug";
/// How often the poll loop reconciles.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Reconciles every app of `bug` forever; `any_revision` lists them as an informer's cache
/// would (`resourceVersion=0`: any revision will do). A failed reconcile is logged and retried
/// at the next poll.
pub(crate) async fn poll<F, Fut>(
    client: Client,
    bug: &str,
    any_revision: bool,
    reconcile: F,
    fixed: bool,
) -> anyhow::Result<()>
where
    F: Fn(Api<ConfigMap>, ConfigMap, bool) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let all: Api<ConfigMap> = Api::all(client.clone());
    let mut params = ListParams::default().labels(&format!("{BUG_LABEL}={bug}"));
    if any_revision {
        params = params.match_any();
    }
    loop {
        match all.list(&params).await {
            Ok(apps) => {
                for app in apps {
                    let api = Api::namespaced(client.clone(), &app.namespace().unwrap_or_default());
                    if let Err(e) = reconcile(api, app, fixed).await {
                        eprintln!("{bug}: reconcile failed: {e:#}");
                    }
                }
            }
            Err(e) => eprintln!("{bug}: cannot list apps: {e}"),
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Hands every event of a watch on the apps of `bug` to `handle`, in order (with the API of
/// the app's namespace; `None` for the events of a relist's start and end).
pub(crate) async fn watch<F, Fut>(
    client: Client,
    bug: &str,
    handle: F,
    fixed: bool,
) -> anyhow::Result<()>
where
    F: Fn(Client, watcher::Event<ConfigMap>, bool) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let config = watcher::Config::default()
        .labels(&format!("{BUG_LABEL}={bug}"))
        .any_semantic();
    let mut events =
        std::pin::pin!(watcher(Api::<ConfigMap>::all(client.clone()), config).default_backoff());
    loop {
        match events.try_next().await {
            Ok(Some(event)) => {
                if let Err(e) = handle(client.clone(), event, fixed).await {
                    eprintln!("{bug}: handling an event failed: {e:#}");
                }
            }
            Ok(None) => anyhow::bail!("the watch ended"),
            Err(e) => eprintln!("{bug}: watch error (it relists): {e}"),
        }
    }
}

/// The API of `app`'s namespace.
pub(crate) fn api_of(client: &Client, app: &ConfigMap) -> Api<ConfigMap> {
    Api::namespaced(client.clone(), &app.namespace().unwrap_or_default())
}

/// `data[key]` of a ConfigMap.
pub(crate) fn data<'a>(cm: &'a ConfigMap, key: &str) -> Option<&'a str> {
    cm.data.as_ref()?.get(key).map(String::as_str)
}

/// `metadata.annotations[key]` of a ConfigMap.
pub(crate) fn annotation<'a>(cm: &'a ConfigMap, key: &str) -> Option<&'a str> {
    cm.annotations().get(key).map(String::as_str)
}

/// A number in `data[key]`, 0 when absent.
pub(crate) fn number(cm: &ConfigMap, key: &str) -> anyhow::Result<u32> {
    Ok(data(cm, key)
        .map(str::parse::<u32>)
        .transpose()?
        .unwrap_or(0))
}

/// A ConfigMap named `name` with `data` and `annotations`.
pub(crate) fn config_map(
    name: &str,
    data: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> ConfigMap {
    let map = |pairs: &[(&str, &str)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        })
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            annotations: map(annotations),
            ..ObjectMeta::default()
        },
        data: map(data),
        ..ConfigMap::default()
    }
}

/// Creates `cm`; one that exists already is fine (`Ok(false)`).
pub(crate) async fn create_if_missing(
    api: &Api<ConfigMap>,
    cm: &ConfigMap,
) -> anyhow::Result<bool> {
    match api.create(&PostParams::default(), cm).await {
        Ok(_) => Ok(true),
        Err(e) if status_code(&e) == Some(409) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Merge-patches `name` with `patch` (JSON merge patch: only the keys it names change).
pub(crate) async fn merge(
    api: &Api<ConfigMap>,
    name: &str,
    patch: serde_json::Value,
) -> anyhow::Result<ConfigMap> {
    Ok(api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// Deletes `name`; one that is gone already is fine (`Ok(false)`).
pub(crate) async fn delete_if_present(
    api: &Api<ConfigMap>,
    name: &str,
    params: &DeleteParams,
) -> anyhow::Result<bool> {
    match api.delete(name, params).await {
        Ok(_) => Ok(true),
        Err(e) if status_code(&e) == Some(404) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The HTTP status of a failed call, when the server answered one.
pub(crate) fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}
