//! The `ReportDataSource` controller: a `history` source is `Ready` and its status counts what
//! the history holds (tests wait on it before moving a controlled clock); a
//! `prometheusMetricsImporter` source is not ready and says why — the importer is not built — so
//! a report reading it fails with that message rather than with an empty table.

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use opkit::{Action, Context};

use crate::api::{ReportDataSource, ReportDataSourceStatus};
use crate::report::State;

/// How often a history source's counts are refreshed.
const REFRESH: Duration = Duration::from_millis(200);

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
        (None, Some(importer)) => (
            false,
            "ImporterNotBuilt",
            format!(
                "prometheusMetricsImporter (query {:?}) is declared but the Prometheus importer \
                 is not built yet: this data source has no rows, and reports reading it fail",
                importer.query
            ),
            Action::await_change(),
        ),
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
