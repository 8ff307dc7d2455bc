//! The `Report` controller: runs each due period of a report (see [`crate::schedule`]) over the
//! history's tables, prices it with the report's `rateCard` (`opkit_metering::price`, as
//! `opkit report run` does), stores each result ([`crate::results`]), deletes results past
//! `expiration`, and says in the status what happened.
//!
//! Status: `lastReportTime` (the end of the last period run), `nextReportTime` (when the next
//! period ends and runs), condition `Running` (reason `Scheduled`, `ReportingPeriodWaitingForData`,
//! `ReportFinished` or `GenerateReportFailed`) and condition `Failed` (the error of the last
//! attempt: an unknown or bad query, a missing input, a bad spec). A failed period is tried again
//! with the runtime's backoff, and the periods after it wait for it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use opkit::{Action, Context};
use opkit_metering::lifetime::GroupKind;
use opkit_metering::{
    Catalog, CostError, DataSource, DataSourceKind, InputType, Period, builtin, tables,
};

use crate::api::{
    PrometheusMetricsImporter, Report, ReportDataSource, ReportQuery, ReportStatus, to_query,
};
use crate::clock::Clock;
use crate::history::History;
use crate::prometheus::{Prometheus, PrometheusError};
use crate::schedule::{self, Plan};

/// The group of metering's own kinds, never metered.
const GROUP: &str = "metering.opkit.dev";

/// What the controller shares.
pub(crate) struct State {
    pub(crate) history: History,
    pub(crate) clock: Clock,
    pub(crate) prometheus: Prometheus,
}

/// Why a reconcile failed (the report's own failures go into its status instead).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error("cannot write the status of Report {name}: {source}")]
    Status {
        name: String,
        #[source]
        source: opkit::Error,
    },
    #[error(transparent)]
    Clock(#[from] crate::clock::ClockError),
}

/// What one reconcile achieved.
enum Outcome {
    /// Periods remain; the next ends at this instant.
    Scheduled(Timestamp),
    /// A one-shot report waits for its period to end.
    Waiting(Timestamp),
    /// A roll-up waits for the earlier Report it reads to cover the period (the message).
    WaitingForReport(String),
    /// Every period has run.
    Finished,
    /// A period (or the spec) failed.
    Failed(String),
}

pub(crate) async fn reconcile(
    report: Arc<Report>,
    ctx: Arc<Context<State>>,
) -> Result<Action, ReconcileError> {
    let state = ctx.data();
    let now = state.clock.now()?;
    let status = report.status.clone().unwrap_or_default();
    let reported = status.last_report_time.as_ref().map(|t| t.0);
    let mut ran_to = reported;
    let plan = match schedule::plan(&report.spec, reported, now) {
        Err(e) => Err(e.to_string()),
        Ok(plan) => check_rate_card(ctx.client(), &report).await.map(|()| plan),
    };
    let outcome = match plan {
        Err(message) => Outcome::Failed(message),
        Ok(plan) => {
            let Plan {
                due,
                next_start,
                next_end,
            } = plan;
            if ran_to.is_none() && report.spec.schedule.is_some() {
                // A scheduled report without reportingStart begins at the boundary chosen now.
                ran_to = next_start.filter(|_| due.is_empty());
            }
            let mut failure = None;
            for period in due {
                match run_period(&ctx, &report, period).await {
                    Ok(()) => ran_to = Some(period.end),
                    Err(PeriodError::Failed(message)) => {
                        failure = Some(Outcome::Failed(format!(
                            "period {} to {}: {message}",
                            period.start, period.end
                        )));
                        break;
                    }
                    Err(PeriodError::Waiting(message)) => {
                        failure = Some(Outcome::WaitingForReport(format!(
                            "period {} to {}: {message}",
                            period.start, period.end
                        )));
                        break;
                    }
                }
            }
            match (failure, next_end) {
                (Some(outcome), _) => outcome,
                (None, None) => Outcome::Finished,
                (None, Some(end)) if report.spec.schedule.is_none() => Outcome::Waiting(end),
                (None, Some(end)) => Outcome::Scheduled(end),
            }
        }
    };
    if let Some(expiration) = &report.spec.expiration {
        match opkit_apimachinery::duration::parse_std(expiration) {
            Ok(keep) => {
                let cutoff = jiff::SignedDuration::try_from(keep)
                    .ok()
                    .and_then(|keep| now.checked_sub(keep).ok());
                if let Some(cutoff) = cutoff
                    && let Err(e) = crate::results::expire(ctx.client(), &report, cutoff).await
                {
                    tracing::warn!("Report {}: {e}", report.name_any());
                }
            }
            Err(e) => {
                let outcome = Outcome::Failed(format!("spec.expiration: {e}"));
                return finish(&ctx, &report, status, ran_to, outcome, now).await;
            }
        }
    }
    finish(&ctx, &report, status, ran_to, outcome, now).await
}

/// Writes the status for `outcome` and says when to look again.
async fn finish(
    ctx: &Context<State>,
    report: &Report,
    old: ReportStatus,
    ran_to: Option<Timestamp>,
    outcome: Outcome,
    now: Timestamp,
) -> Result<Action, ReconcileError> {
    let generation = report.metadata.generation;
    let mut status = old.clone();
    status.last_report_time = ran_to.map(Time);
    let (reason, message, running) = match &outcome {
        Outcome::Scheduled(end) => ("Scheduled", format!("the next period ends at {end}"), true),
        Outcome::Waiting(end) => (
            "ReportingPeriodWaitingForData",
            format!("the reporting period ends at {end}; the report runs then"),
            true,
        ),
        Outcome::WaitingForReport(message) => {
            ("ReportingPeriodWaitingForData", message.clone(), true)
        }
        Outcome::Finished => ("ReportFinished", "every period has run".to_owned(), false),
        Outcome::Failed(message) => ("GenerateReportFailed", message.clone(), false),
    };
    status.next_report_time = match &outcome {
        Outcome::Scheduled(end) | Outcome::Waiting(end) => Some(Time(*end)),
        _ => None,
    };
    opkit::conditions::set(
        &mut status.conditions,
        opkit::conditions::of("Running", running)
            .reason(reason)
            .message(message.clone())
            .observed_generation(generation),
    );
    let failed = matches!(outcome, Outcome::Failed(_));
    opkit::conditions::set(
        &mut status.conditions,
        opkit::conditions::of("Failed", failed)
            .reason(if failed { reason } else { "NoError" })
            .message(if failed { message } else { String::new() })
            .observed_generation(generation),
    );
    if status != old {
        ctx.apply_status(report, &status)
            .await
            .map_err(|source| ReconcileError::Status {
                name: report.name_any(),
                source,
            })?;
    }
    let clock = &ctx.data().clock;
    Ok(match outcome {
        Outcome::Failed(_) => Action::requeue_with_backoff(),
        // The earlier report's status is not watched from here: look again shortly.
        Outcome::WaitingForReport(_) => Action::requeue(clock.sleep_for(INPUT_REPORT_POLL)),
        Outcome::Finished => Action::await_change(),
        Outcome::Scheduled(end) | Outcome::Waiting(end) => {
            let wait = Duration::try_from(end.duration_since(now)).unwrap_or_default();
            Action::requeue(clock.sleep_for(wait))
        }
    })
}

/// How often a roll-up looks again at an earlier Report that has not covered its period yet.
const INPUT_REPORT_POLL: Duration = Duration::from_secs(2);

/// Why a period did not run.
enum PeriodError {
    /// It failed (the message, as the status says it).
    Failed(String),
    /// An earlier Report it reads has not run for the whole period yet.
    Waiting(String),
}

impl From<String> for PeriodError {
    fn from(message: String) -> Self {
        PeriodError::Failed(message)
    }
}

/// Runs `report` for `period` and stores the result.
async fn run_period(
    ctx: &Context<State>,
    report: &Report,
    period: Period,
) -> Result<(), PeriodError> {
    let client = ctx.client();
    let namespace = report.namespace().unwrap_or_default();
    let Catalogued {
        catalog,
        metered,
        imported,
    } = catalogue(client, report).await?;
    let history = ctx.data().history.snapshot();
    let mut inputs = tables::tables(&history, &metered, report.spec.charge_basis.into(), period)
        .map_err(|e| format!("the history: {e}"))?;
    // The Prometheus sources the query reads, imported for the period (over a history table of
    // the same name: the source a user declared wins).
    let read = catalog
        .sample_sources(&report.spec.query)
        .map_err(|e| e.to_string())?;
    for (name, importer) in imported.iter().filter(|(n, _)| read.contains(*n)) {
        let failed = |e: PrometheusError| format!("ReportDataSource {name:?}: {e}");
        let source = ctx
            .data()
            .prometheus
            .source(client, &namespace, importer)
            .await
            .map_err(failed)?;
        let rows = ctx
            .data()
            .prometheus
            .import(&source, period)
            .await
            .map_err(failed)?;
        inputs.insert(name.clone(), rows);
    }
    if let Some(missing) = read.iter().find(|n| !inputs.contains_key(*n)) {
        return Err(format!(
            "ReportQuery {:?} reads data source {missing:?}, which the history does not fill: \
             declare a ReportDataSource {missing:?} with a prometheusMetricsImporter \
             (docs/DESIGN-metering.md gives its query)",
            report.spec.query
        )
        .into());
    }
    let reports = earlier_reports(client, &catalog, report, period).await?;
    let table = opkit_metering::run_with(&catalog, &report.spec.query, &inputs, &reports, period)
        .map_err(|e| e.to_string())?;
    let table = priced(report, table)?;
    crate::results::store(client, report, period, &table, ctx.field_manager())
        .await
        .map_err(|e| PeriodError::Failed(e.to_string()))
}

/// What a report's query can read: the catalog (built-in, per-kind and the namespace's
/// ReportQueries, the report's inputs bound), the metered kinds, the Prometheus sources.
struct Catalogued {
    catalog: Catalog,
    metered: BTreeSet<GroupKind>,
    imported: BTreeMap<String, PrometheusMetricsImporter>,
}

async fn catalogue(client: &kube::Client, report: &Report) -> Result<Catalogued, String> {
    let namespace = report.namespace().unwrap_or_default();
    let metered = metered_kinds(client).await?;
    let mut catalog = builtin::catalog();
    builtin::add_history(&mut catalog, &metered);
    let queries: Api<ReportQuery> = Api::namespaced(client.clone(), &namespace);
    for q in list(&queries, "ReportQueries").await? {
        let query = to_query(&q.name_any(), &q.spec)
            .map_err(|e| format!("ReportQuery {:?} does not read: {e}", q.name_any()))?;
        catalog.add_query(query);
    }
    let sources: Api<ReportDataSource> = Api::namespaced(client.clone(), &namespace);
    let mut imported = BTreeMap::new();
    for s in list(&sources, "ReportDataSources").await? {
        if let Some(importer) = &s.spec.prometheus_metrics_importer {
            imported.insert(s.name_any(), importer.clone());
            catalog.add_data_source(DataSource {
                name: s.name_any(),
                kind: DataSourceKind::Samples,
            });
        }
    }
    bind_inputs(&mut catalog, report)?;
    Ok(Catalogued {
        catalog,
        metered,
        imported,
    })
}

/// Fails unless the report's rate card (if any) prices a column of its query: checked against
/// the query's declared columns whenever the report is reconciled, before any period is due.
async fn check_rate_card(client: &kube::Client, report: &Report) -> Result<(), String> {
    if report.spec.rate_card.is_none() {
        return Ok(());
    }
    let Catalogued { catalog, .. } = catalogue(client, report).await?;
    let columns = catalog
        .query(&report.spec.query)
        .map_err(|e| e.to_string())?
        .columns
        .clone();
    priced(
        report,
        opkit_metering::Table {
            columns,
            rows: Vec::new(),
        },
    )
    .map(drop)
}

/// The results of the earlier Reports the query reads (a roll-up), every stored period in one
/// table each; waiting until each has run up to the end of `period`.
async fn earlier_reports(
    client: &kube::Client,
    catalog: &Catalog,
    report: &Report,
    period: Period,
) -> Result<BTreeMap<String, opkit_metering::Table>, PeriodError> {
    let namespace = report.namespace().unwrap_or_default();
    let names = catalog
        .reports_read(&report.spec.query)
        .map_err(|e| e.to_string())?;
    let api: Api<Report> = Api::namespaced(client.clone(), &namespace);
    let mut out = BTreeMap::new();
    for name in names {
        if name == report.name_any() {
            return Err(PeriodError::Failed(format!(
                "Report {name:?} reads its own results"
            )));
        }
        let Some(input) = api
            .get_opt(&name)
            .await
            .map_err(|e| format!("cannot read Report {name:?}: {e}"))?
        else {
            return Err(PeriodError::Waiting(format!(
                "the Report {name:?} it reads does not exist (yet)"
            )));
        };
        let reported = input.status.and_then(|s| s.last_report_time).map(|t| t.0);
        if reported.is_none_or(|t| t < period.end) {
            return Err(PeriodError::Waiting(format!(
                "Report {name:?} has reported up to {}, not yet to {}",
                reported.map_or("nothing".to_owned(), |t| t.to_string()),
                period.end
            )));
        }
        let results = crate::results::read(client, &namespace, &name)
            .await
            .map_err(|e| e.to_string())?;
        let mut all: Option<opkit_metering::Table> = None;
        for (_, table) in results {
            match &mut all {
                Some(all) => all.rows.extend(table.rows),
                None => all = Some(table),
            }
        }
        let all = all.ok_or_else(|| format!("the Report {name:?} it reads has no results"))?;
        out.insert(name, all);
    }
    Ok(out)
}

/// `table` with the cost columns of the report's rate card (as it is without one): the pricing
/// `opkit report run` does, so a stored result and an offline one agree.
fn priced(report: &Report, table: opkit_metering::Table) -> Result<opkit_metering::Table, String> {
    let Some(card) = report.spec.rate_card else {
        return Ok(table);
    };
    for (field, rate) in [
        ("cpuCoreHour", card.cpu_core_hour),
        ("memoryGiBHour", card.memory_gib_hour),
        ("storageGiBMonth", card.storage_gib_month),
    ] {
        if let Some(rate) = rate
            && !(rate.is_finite() && rate >= 0.0)
        {
            return Err(format!(
                "spec.rateCard.{field} must be a finite number, at least 0 (got {rate})"
            ));
        }
    }
    opkit_metering::price(&table, &card.into()).map_err(|e| match e {
        CostError::NothingToPrice { columns } => format!(
            "spec.rateCard prices no column of ReportQuery {:?} (cpuCoreHour prices \
             cpu_core_seconds columns, memoryGiBHour memory byte_seconds, storageGiBMonth \
             storage byte_seconds; the query's columns: {})",
            report.spec.query,
            columns.join(", ")
        ),
        other => format!("spec.rateCard: {other}"),
    })
}

/// Gives the report's `inputs` to its query's data-source inputs; refuses unknown inputs.
fn bind_inputs(catalog: &mut Catalog, report: &Report) -> Result<(), String> {
    let name = &report.spec.query;
    let mut query = catalog.query(name).map_err(|e| e.to_string())?.clone();
    for given in &report.spec.inputs {
        let input = query
            .inputs
            .iter_mut()
            .find(|i| i.name == given.name)
            .ok_or_else(|| {
                format!(
                    "spec.inputs: ReportQuery {name:?} has no input {:?}",
                    given.name
                )
            })?;
        if input.ty == InputType::Time {
            return Err(format!(
                "spec.inputs: input {:?} is a time input, set from the reporting period",
                given.name
            ));
        }
        input.default = Some(given.value.clone());
    }
    catalog.add_query(query);
    Ok(())
}

/// The kinds charged for their pods: every custom resource kind but metering's own.
async fn metered_kinds(client: &kube::Client) -> Result<BTreeSet<GroupKind>, String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    Ok(list(&crds, "CustomResourceDefinitions")
        .await?
        .into_iter()
        .filter(|crd| crd.spec.group != GROUP)
        .map(|crd| GroupKind {
            group: crd.spec.group,
            kind: crd.spec.names.kind,
        })
        .collect())
}

async fn list<K>(api: &Api<K>, what: &str) -> Result<Vec<K>, String>
where
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|e| format!("cannot list {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use opkit_metering::{Column, ColumnType, Table, Value};

    use super::*;
    use crate::api::{RateCard, ReportSpec};

    fn report(card: Option<RateCard>) -> Report {
        Report::new(
            "r",
            ReportSpec {
                query: "q".into(),
                rate_card: card,
                ..ReportSpec::default()
            },
        )
    }

    fn core_seconds(v: f64) -> Table {
        Table {
            columns: vec![Column {
                name: "cpu".into(),
                ty: ColumnType::Double,
                unit: Some("cpu_core_seconds".into()),
                table_hidden: false,
            }],
            rows: vec![vec![Value::Double(v)]],
        }
    }

    #[test]
    fn a_rate_card_adds_cost_columns_and_refuses_what_the_schema_cannot_catch() {
        assert_eq!(
            priced(&report(None), core_seconds(7200.0)),
            Ok(core_seconds(7200.0))
        );
        let card = |cpu, memory| {
            report(Some(RateCard {
                cpu_core_hour: cpu,
                memory_gib_hour: memory,
                storage_gib_month: None,
            }))
        };
        let table = priced(&card(Some(0.5), None), core_seconds(7200.0)).unwrap();
        assert_eq!(table.columns[1].name, "cpu_cost");
        assert_eq!(table.rows[0][1], Value::Double(1.0));
        assert_eq!(
            priced(&card(Some(f64::NAN), None), core_seconds(1.0)).unwrap_err(),
            "spec.rateCard.cpuCoreHour must be a finite number, at least 0 (got NaN)"
        );
        assert_eq!(
            priced(&card(None, Some(1.0)), core_seconds(1.0)).unwrap_err(),
            "spec.rateCard prices no column of ReportQuery \"q\" (cpuCoreHour prices \
             cpu_core_seconds columns, memoryGiBHour memory byte_seconds, storageGiBMonth \
             storage byte_seconds; the query's columns: cpu (cpu_core_seconds))"
        );
    }
}
