//! The `ReportDataSource` controller: a `history` source is `Ready` and its status counts what
//! the history holds (tests wait on it before moving a controlled clock); a
//! `prometheusMetricsImporter` source is `Ready` when its Prometheus answers its query (asked
//! again every [`PROMETHEUS_CHECK`]), and otherwise says why — the same words a report reading
//! it fails with: reason `InvalidSpec` (a bad url, resolution or TLS setting),
//! `PrometheusConfigUnresolved` (its CA ConfigMap or token Secret is missing or unreadable) or
//! `PrometheusQueryFailed` (Prometheus unreachable, its certificate refused, the query refused).

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use opkit::{Action, Context};

use crate::api::{ReportDataSource, ReportDataSourceStatus};
use crate::report::State;

/// How often a history source's counts are refreshed.
const REFRESH: Duration = Duration::from_millis(200);

/// How often a Prometheus source's server is asked again.
const PROMETHEUS_CHECK: Duration = Duration::from_secs(30);

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the status of ReportDataSource {name}: {source}")]
pub(crate) struct StatusError {
    name: String,
    #[source]
    source: opkit::Error,
}

pub(crate) async fn reconcile(
    source: Arc<ReportDataSource>,
    ctx: Arc<Context<State>>,
) -> Result<Action, StatusError> {
    let old = source.status.clone().unwrap_or_default();
    let mut status = ReportDataSourceStatus {
        conditions: old.conditions.clone(),
        history: None,
    };
    let generation = source.metadata.generation;
    let (ready, reason, message, next) = match (
        &source.spec.history,
        &source.spec.prometheus_metrics_importer,
    ) {
        (Some(_), None) => {
            status.history = Some(ctx.data().history.status());
            (
                true,
                "HistoryWatched",
                "the control plane's objects are watched from the controller's start".to_owned(),
                Action::requeue(REFRESH),
            )
        }
        (None, Some(importer)) => {
            let prometheus = &ctx.data().prometheus;
            let namespace = source.namespace().unwrap_or_default();
            let checked = match prometheus.source(ctx.client(), &namespace, importer).await {
                Ok(resolved) => prometheus.check(&resolved).await,
                Err(e) => Err(e),
            }
            .map_err(|e| (e.reason(), e));
            match checked {
                Ok(()) => (
                    true,
                    "PrometheusQueryAnswered",
                    format!(
                        "Prometheus answers query {:?}; it is imported for each reporting period",
                        importer.query
                    ),
                    Action::requeue(PROMETHEUS_CHECK),
                ),
                Err((reason, e)) => (
                    false,
                    reason,
                    e.to_string(),
                    Action::requeue(PROMETHEUS_CHECK),
                ),
            }
        }
        _ => (
            false,
            "InvalidSpec",
            "exactly one of spec.history and spec.prometheusMetricsImporter must be set".to_owned(),
            Action::await_change(),
        ),
    };
    opkit::conditions::set(
        &mut status.conditions,
        opkit::conditions::ready(ready)
            .reason(reason)
            .message(message)
            .observed_generation(generation),
    );
    if status != old {
        ctx.apply_status(source.as_ref(), &status)
            .await
            .map_err(|source_err| StatusError {
                name: source.name_any(),
                source: source_err,
            })?;
    }
    Ok(next)
}
