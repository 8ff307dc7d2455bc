//! `metering.opkit.dev/v1`: `ReportDataSource`, `ReportQuery` and `Report`, with Operator
//! Metering's field names (`metering.openshift.io/v1`) so its manifests read with the group
//! changed. The CRDs are derived from these types ([`crds`]) and installed by the controller when
//! it starts, so the API a cluster serves is the one the running controller reads.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A source of rows for ReportQueries.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "metering.opkit.dev",
    version = "v1",
    kind = "ReportDataSource",
    namespaced,
    status = "ReportDataSourceStatus",
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Pods", "type": "integer", "jsonPath": ".status.history.livePods"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.history) != has(self.prometheusMetricsImporter)",
    "message": "exactly one of history and prometheusMetricsImporter"
}]))]
pub struct ReportDataSourceSpec {
    /// The control plane's object history (embedded, the default source): fills the tables
    /// `pod-request-cpu-cores`, `pod-request-memory-bytes`, `resource-request-cpu-cores`,
    /// `resource-request-memory-bytes` and `resource-objects` exactly from object lifetimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistorySource>,
    /// Metering's Prometheus importer: for each reporting period, a range query against a
    /// Prometheus server, its series stored as this data source's rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_metrics_importer: Option<PrometheusMetricsImporter>,
}

/// The embedded history source (no settings).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct HistorySource {}

/// A Prometheus query imported as samples: one row per series and step (`amount` the value,
/// `stepSize` the resolution, `labels` the series' labels).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusMetricsImporter {
    /// The PromQL query.
    #[schemars(length(min = 1))]
    pub query: String,
    /// The Prometheus server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_config: Option<PrometheusConfig>,
    /// The step of the range queries (a Go duration; `1m` when absent, Metering's import step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
}

/// Where the Prometheus server is and how to talk to it: Operator Metering's `prometheus`
/// settings (`certificateAuthority.configMap`, `auth.tokenSecret`) per data source.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusConfig {
    /// Its base URL (`http://prometheus.monitoring:9090`, `https://prometheus-k8s:9091`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The CA that signs the server's certificate (an `https://` url); without it the
    /// platform's trusted roots are used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<PrometheusCertificateAuthority>,
    /// Credentials sent with every query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<PrometheusAuth>,
    /// Accept any server certificate (an `https://` url; for testing only, never with
    /// `certificateAuthority`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
}

/// Where the CA certificate of an `https://` Prometheus is.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusCertificateAuthority {
    /// A ConfigMap in the data source's namespace holding the CA bundle (PEM).
    pub config_map: CaConfigMap,
}

/// A key of a ConfigMap holding PEM certificates.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CaConfigMap {
    /// The ConfigMap.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The key holding the PEM bundle (`ca.crt` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// How the importer authenticates to Prometheus.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusAuth {
    /// A bearer token from a Secret in the data source's namespace, sent as
    /// `Authorization: Bearer <token>`.
    pub token_secret: TokenSecret,
}

/// A key of a Secret holding a bearer token.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TokenSecret {
    /// The Secret.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The key holding the token (`token` when absent); surrounding whitespace is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// What the controller observed of a data source.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportDataSourceStatus {
    /// `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// What the history holds (history sources only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryStatus>,
}

/// What the history holds.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryStatus {
    /// Pods alive now.
    pub live_pods: u64,
    /// Pods alive now whose `Ready` condition is `True`.
    #[serde(default)]
    pub ready_pods: u64,
    /// Pods recorded (alive or gone).
    pub pods: u64,
    /// Other objects recorded (possible owners of pods).
    pub objects: u64,
    /// Other objects alive now.
    pub live_objects: u64,
    /// Changes recorded since the controller started.
    pub revision: u64,
    /// The revision the checkpoint file holds (absent when the history is not kept on disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpointed_revision: Option<u64>,
}

/// SQL over data sources with a declared result.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "metering.opkit.dev",
    version = "v1",
    kind = "ReportQuery",
    namespaced,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ReportQuerySpec {
    /// The result's columns, in report order.
    #[schemars(length(min = 1))]
    pub columns: Vec<QueryColumn>,
    /// The inputs the SQL names as `{{Name}}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<QueryInput>,
    /// The SQL (SQLite's dialect).
    #[schemars(length(min = 1))]
    pub query: String,
}

/// One column of a query's result.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryColumn {
    /// Its name in the SQL result.
    pub name: String,
    /// `varchar`, `double`, `bigint`, `timestamp` or `map<varchar, varchar>`.
    #[serde(rename = "type")]
    pub type_: ColumnType,
    /// Its unit (`cpu_core_seconds`, `kubernetes_pod`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Left out of reports.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub table_hidden: bool,
}

/// A column's type, named as Metering (Presto) named it.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ColumnType {
    /// Text.
    #[default]
    #[serde(rename = "varchar")]
    Varchar,
    /// A 64-bit float.
    #[serde(rename = "double")]
    Double,
    /// A 64-bit integer.
    #[serde(rename = "bigint")]
    Bigint,
    /// An instant.
    #[serde(rename = "timestamp")]
    Timestamp,
    /// Labels.
    #[serde(rename = "map<varchar, varchar>")]
    Map,
}

/// A named input of a query.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct QueryInput {
    /// The name the SQL refers to.
    pub name: String,
    /// `time` (`ReportingStart`, `ReportingEnd`), `ReportDataSource` or `Report` (an earlier
    /// Report's results: a roll-up).
    #[serde(rename = "type")]
    pub type_: InputType,
    /// The value when a report gives none (a data source's or a Report's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// What kind of value an input takes.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum InputType {
    /// An instant.
    #[default]
    #[serde(rename = "time")]
    Time,
    /// A data source's name.
    ReportDataSource,
    /// An earlier Report's name (in the same namespace): the query reads its results.
    Report,
}

/// A query run for a period, once or on a schedule; its results are served by the report API.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "metering.opkit.dev",
    version = "v1",
    kind = "Report",
    namespaced,
    status = "ReportStatus",
    printcolumn = r#"{"name": "Query", "type": "string", "jsonPath": ".spec.query"}"#,
    printcolumn = r#"{"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule.period"}"#,
    printcolumn = r#"{"name": "Running", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Running\")].reason"}"#,
    printcolumn = r#"{"name": "Failed", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Failed\")].status"}"#,
    printcolumn = r#"{"name": "Last Report Time", "type": "string", "jsonPath": ".status.lastReportTime"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ReportSpec {
    /// The ReportQuery: one in the report's namespace, or a built-in one.
    #[schemars(length(min = 1))]
    pub query: String,
    /// The start of the first period (included). A scheduled report without it starts at the
    /// schedule's first boundary after the controller first sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_start: Option<Time>,
    /// The end of the last period (excluded); required without a schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_end: Option<Time>,
    /// Run for each period of this schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ReportSchedule>,
    /// Run at once instead of waiting for the period to end (a report without a schedule).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_immediately: bool,
    /// Values for the query's data-source and Report inputs (a data source's or an earlier
    /// Report's name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<ReportInput>,
    /// How long a period's result is kept after the period ended (a Go duration, `720h`);
    /// kept for ever when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<String>,
    /// Prices that add a `<column>_cost` column for each usage column they price to every
    /// stored result; the report fails if they price none of the query's columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_card: Option<RateCard>,
    /// Which part of a pod's life the history's tables charge its requests for: `Existence`
    /// (from creation to deletion, what the scheduler reserves; the default) or `Ready` (only
    /// while its `Ready` condition is `True`, what it serves with).
    #[serde(default, skip_serializing_if = "ChargeBasis::is_existence")]
    #[schemars(extend("default" = "Existence"))]
    pub charge_basis: ChargeBasis,
}

/// Which part of a pod's life its requests are charged for.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ChargeBasis {
    /// From creation to deletion.
    #[default]
    Existence,
    /// While the pod's `Ready` condition is `True`.
    Ready,
}

impl ChargeBasis {
    fn is_existence(&self) -> bool {
        *self == ChargeBasis::Existence
    }
}

impl From<ChargeBasis> for opkit_metering::lifetime::Basis {
    fn from(basis: ChargeBasis) -> Self {
        match basis {
            ChargeBasis::Existence => opkit_metering::lifetime::Basis::Existence,
            ChargeBasis::Ready => opkit_metering::lifetime::Basis::Ready,
        }
    }
}

/// A rate card, as OpenCost prices an allocation: plain numbers in one currency, each at least
/// 0. `cpu_core_seconds` columns are priced per core-hour, memory `byte_seconds` per GiB-hour,
/// storage `byte_seconds` (a column named `…storage…`) per GiB-month of 730 hours.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.cpuCoreHour) || has(self.memoryGiBHour) || has(self.storageGiBMonth)",
    "message": "a rate card needs at least one of cpuCoreHour, memoryGiBHour and storageGiBMonth"
}]))]
pub struct RateCard {
    /// The cost of one CPU core for one hour.
    #[serde(
        rename = "cpuCoreHour",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub cpu_core_hour: Option<f64>,
    /// The cost of one GiB of memory for one hour.
    #[serde(
        rename = "memoryGiBHour",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub memory_gib_hour: Option<f64>,
    /// The cost of one GiB of storage for one month (730 hours).
    #[serde(
        rename = "storageGiBMonth",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub storage_gib_month: Option<f64>,
}

impl From<RateCard> for opkit_metering::RateCard {
    fn from(card: RateCard) -> Self {
        opkit_metering::RateCard {
            per_core_hour: card.cpu_core_hour,
            per_gib_hour: card.memory_gib_hour,
            per_gib_month: card.storage_gib_month,
        }
    }
}

/// A value for one input of the query.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ReportInput {
    /// The input's name.
    pub name: String,
    /// Its value (a data source's or a Report's name).
    pub value: String,
}

/// When a report runs: at the end of each period.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportSchedule {
    /// `hourly`, `daily`, `weekly`, `monthly` or `cron`.
    pub period: ReportPeriod,
    /// Where hourly periods start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hourly: Option<Hourly>,
    /// Where daily periods start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily: Option<Daily>,
    /// Where weekly periods start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weekly: Option<Weekly>,
    /// Where monthly periods start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly: Option<Monthly>,
    /// The periods' boundaries as a cron expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<Cron>,
}

/// A schedule's period.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ReportPeriod {
    /// Every hour.
    #[default]
    Hourly,
    /// Every day.
    Daily,
    /// Every week.
    Weekly,
    /// Every month.
    Monthly,
    /// At a cron expression's times.
    Cron,
}

/// The minute and second of the hour periods start at.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Hourly {
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub minute: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub second: u8,
}

/// The time of day periods start at (UTC).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Daily {
    /// 0–23.
    #[serde(default)]
    #[schemars(range(min = 0, max = 23))]
    pub hour: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub minute: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub second: u8,
}

/// The day and time of the week periods start at (UTC).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Weekly {
    /// `sunday` … `saturday` (default `sunday`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_week: Option<String>,
    /// 0–23.
    #[serde(default)]
    #[schemars(range(min = 0, max = 23))]
    pub hour: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub minute: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub second: u8,
}

/// The day and time of the month periods start at (UTC).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Monthly {
    /// 1–31 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 31))]
    pub day_of_month: Option<u8>,
    /// 0–23.
    #[serde(default)]
    #[schemars(range(min = 0, max = 23))]
    pub hour: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub minute: u8,
    /// 0–59.
    #[serde(default)]
    #[schemars(range(min = 0, max = 59))]
    pub second: u8,
}

/// A cron expression (five fields, UTC).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Cron {
    /// The expression (`0 */6 * * *`).
    pub expression: String,
}

/// What the controller did with a report.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportStatus {
    /// `Running` (reason `Scheduled`, `ReportingPeriodWaitingForData`, `ReportFinished` or
    /// `GenerateReportFailed`) and `Failed` (the last attempt's error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The end of the last period reported (before the first, the first period's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report_time: Option<Time>,
    /// When the next period ends and runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_report_time: Option<Time>,
}

/// The three CRDs.
pub fn crds() -> [CustomResourceDefinition; 3] {
    use kube::CustomResourceExt;
    [ReportDataSource::crd(), ReportQuery::crd(), Report::crd()]
}

/// The ReportQuery `name` with `spec`, in opkit-metering's model.
pub(crate) fn to_query(
    name: &str,
    spec: &ReportQuerySpec,
) -> Result<opkit_metering::ReportQuery, serde_json::Error> {
    let mut value = serde_json::to_value(spec)?;
    value["name"] = name.into();
    serde_json::from_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metering_report_reads_with_its_schedule_and_the_crds_are_namespaced() {
        let report: Report = serde_json::from_value(serde_json::json!({
            "apiVersion": "metering.opkit.dev/v1", "kind": "Report",
            "metadata": {"name": "pod-cpu-request-hourly", "namespace": "metering"},
            "spec": {"query": "pod-cpu-request", "reportingStart": "2021-07-01T00:00:00Z",
                     "schedule": {"period": "hourly", "hourly": {"minute": 0, "second": 0}},
                     "expiration": "720h"}
        }))
        .unwrap();
        let schedule = report.spec.schedule.unwrap();
        assert_eq!(schedule.period, ReportPeriod::Hourly);
        assert_eq!(schedule.hourly, Some(Hourly::default()));
        for crd in crds() {
            let crd = serde_json::to_value(crd).unwrap();
            assert_eq!(crd["spec"]["scope"], "Namespaced");
            assert_eq!(crd["spec"]["group"], "metering.opkit.dev");
        }
    }

    #[test]
    fn the_report_crd_validates_the_rate_card_and_the_source_crd_has_the_tls_settings() {
        let [sources, _, reports] = crds().map(|crd| serde_json::to_value(crd).unwrap());
        let spec = |crd: &serde_json::Value| {
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone()
        };
        let card = &spec(&reports)["properties"]["rateCard"];
        for rate in ["cpuCoreHour", "memoryGiBHour", "storageGiBMonth"] {
            assert_eq!(card["properties"][rate]["type"], "number", "{card}");
            assert_eq!(card["properties"][rate]["minimum"], 0.0, "{card}");
        }
        assert_eq!(
            card["x-kubernetes-validations"][0]["rule"],
            "has(self.cpuCoreHour) || has(self.memoryGiBHour) || has(self.storageGiBMonth)"
        );
        let basis = &spec(&reports)["properties"]["chargeBasis"];
        assert_eq!(
            basis["enum"],
            serde_json::json!(["Existence", "Ready"]),
            "{basis}"
        );
        assert_eq!(basis["default"], "Existence", "{basis}");
        let config = &spec(&sources)["properties"]["prometheusMetricsImporter"]["properties"]["prometheusConfig"]
            ["properties"];
        assert_eq!(
            config["certificateAuthority"]["properties"]["configMap"]["required"],
            serde_json::json!(["name"]),
            "{config}"
        );
        assert_eq!(
            config["auth"]["properties"]["tokenSecret"]["required"],
            serde_json::json!(["name"]),
            "{config}"
        );
        assert_eq!(config["insecureSkipVerify"]["type"], "boolean", "{config}");
        let report: ReportSpec = serde_json::from_value(serde_json::json!({
            "query": "q", "rateCard": {"cpuCoreHour": 0.031611, "storageGiBMonth": 0.04}
        }))
        .unwrap();
        assert_eq!(report.charge_basis, ChargeBasis::Existence);
        let card = opkit_metering::RateCard::from(report.rate_card.unwrap());
        assert_eq!(
            (card.per_core_hour, card.per_gib_hour, card.per_gib_month),
            (Some(0.031611), None, Some(0.04))
        );
    }

    #[test]
    fn a_report_query_spec_converts_to_the_engines_model() {
        let spec: ReportQuerySpec = serde_json::from_value(serde_json::json!({
            "columns": [{"name": "labels", "type": "map<varchar, varchar>", "tableHidden": true},
                        {"name": "n", "type": "double", "unit": "cpu_cores"}],
            "inputs": [{"name": "Src", "type": "ReportDataSource", "default": "s"}],
            "query": "SELECT 1"
        }))
        .unwrap();
        let q = to_query("x", &spec).unwrap();
        assert_eq!(q.name, "x");
        assert_eq!(q.columns[0].ty, opkit_metering::ColumnType::Map);
        assert_eq!(q.inputs[0].default.as_deref(), Some("s"));
    }
}
