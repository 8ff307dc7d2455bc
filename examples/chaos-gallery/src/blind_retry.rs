//! A blind retry of a create with a generated name (errors). For each app the operator starts
//! one job: a ConfigMap named by the server (`generateName: <app>-job-`), labelled with its
//! app; then it records the job's name in the app's annotation `job` (and `phase: Started`).
//!
//! The bug: "no `job` annotation" is taken to mean "no job". When the create commits but its
//! response is lost (a timeout, a 500 after the commit), or the record fails, the next attempt
//! creates a second job under another name. The fix: before creating, look for a job labelled
//! with the app, and adopt it — and turn off kube's own retry of a request answered 429, 503 or
//! 504 (`Config::default_retry`, on by default in kube 5), which resends a create with a generated name blindly
//! after a 504 whose create committed (`main.rs`).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::common::{annotation, merge};

/// The label that ties a job to its app.
const JOB_OF: &str = "gallery.opkit.dev/job-of";

pub(crate) async fn reconcile(
    api: Api<ConfigMap>,
    app: ConfigMap,
    fixed: bool,
) -> anyhow::Result<()> {
    let name = app.name_any();
    if annotation(&app, "job").is_some() {
        return Ok(());
    }
    let found = if fixed {
        let jobs = api
            .list(&ListParams::default().labels(&format!("{JOB_OF}={name}")))
            .await?;
        jobs.items.into_iter().next()
    } else {
        None
    };
    let job = match found {
        Some(job) => job,
        None => {
            let mut job = ConfigMap::default();
            job.metadata.generate_name = Some(format!("{name}-job-"));
            job.labels_mut().insert(JOB_OF.to_string(), name.clone());
            api.create(&PostParams::default(), &job).await?
        }
    };
    merge(
        &api,
        &name,
        json!({"metadata": {"annotations": {"job": job.name_any(), "phase": "Started"}}}),
    )
    .await?;
    Ok(())
}
