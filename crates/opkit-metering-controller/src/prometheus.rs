//! Metering's Prometheus importer: a `prometheusMetricsImporter` data source's rows for one
//! reporting period, from range queries (`/api/v1/query_range`) against a Prometheus server.
//!
//! Metering imported continuously into Hive; opkit imports when a period runs, which needs no
//! storage of its own and gives the same rows: the query is evaluated at `start`, `start +
//! step`, … while before `end`, and each point of each series becomes one row in Metering's
//! shape — `amount` the value, `timestamp` the point's instant, `stepSize` the step, `labels`
//! the series' labels. Prometheus answers at most 11,000 points per series, so a long period is
//! asked for in chunks of [`MAX_POINTS`] steps. Points that are not numbers (`NaN`, `±Inf`)
//! carry no amount and are left out.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use opkit_metering::{Period, Sample};
use serde::Deserialize;

use crate::api::PrometheusMetricsImporter;

/// The step when a source gives no `resolution`: Metering's import step.
const DEFAULT_STEP: Duration = Duration::from_secs(60);

/// The most points asked for per series in one range query (Prometheus refuses above 11,000).
const MAX_POINTS: u32 = 10_000;

/// How long one request to Prometheus may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Why a Prometheus source gave no rows.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PrometheusError {
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig.url is required: the Prometheus server's \
         base URL, e.g. http://prometheus.monitoring:9090"
    )]
    NoUrl,
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig.url {0:?} is not an http:// or https:// URL"
    )]
    BadUrl(String),
    #[error("spec.prometheusMetricsImporter.resolution {value:?}: {message}")]
    BadResolution { value: String, message: String },
    #[error("cannot build an HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot reach Prometheus at {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("Prometheus at {url} refused query {query:?}: {error_type}: {error}")]
    Refused {
        url: String,
        query: String,
        error_type: String,
        error: String,
    },
    #[error("Prometheus at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("Prometheus at {url} answered what is not a query result: {message}")]
    BadAnswer { url: String, message: String },
}

/// One source, checked: where, what and how finely.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    url: String,
    query: String,
    step: Duration,
}

impl Source {
    /// The source a `prometheusMetricsImporter` describes.
    pub(crate) fn of(importer: &PrometheusMetricsImporter) -> Result<Source, PrometheusError> {
        let url = importer
            .prometheus_config
            .as_ref()
            .and_then(|c| c.url.as_deref())
            .filter(|u| !u.is_empty())
            .ok_or(PrometheusError::NoUrl)?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(PrometheusError::BadUrl(url.to_owned()));
        }
        let step = match &importer.resolution {
            None => DEFAULT_STEP,
            Some(value) => {
                let bad = |message: String| PrometheusError::BadResolution {
                    value: value.clone(),
                    message,
                };
                let step = opkit_apimachinery::duration::parse_std(value)
                    .map_err(|e| bad(e.to_string()))?;
                if step < Duration::from_millis(1) {
                    return Err(bad("must be at least 1ms".into()));
                }
                step
            }
        };
        Ok(Source {
            url: url.trim_end_matches('/').to_owned(),
            query: importer.query.clone(),
            step,
        })
    }
}

/// A client for Prometheus' HTTP API.
#[derive(Clone)]
pub(crate) struct Prometheus {
    http: reqwest::Client,
}

impl Prometheus {
    pub(crate) fn new() -> Result<Prometheus, PrometheusError> {
        // reqwest's rustls takes the process-wide provider (the one kube's client uses too).
        opkit::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(PrometheusError::Client)?;
        Ok(Prometheus { http })
    }

    /// Evaluates the source's query once, now: Prometheus is reachable and the query parses.
    pub(crate) async fn check(&self, source: &Source) -> Result<(), PrometheusError> {
        self.get(source, "query", &[("query", source.query.clone())])
            .await
            .map(drop)
    }

    /// The source's rows for `period`.
    pub(crate) async fn import(
        &self,
        source: &Source,
        period: Period,
    ) -> Result<Vec<Sample>, PrometheusError> {
        let step_nanos = i64::try_from(source.step.as_nanos()).unwrap_or(i64::MAX);
        let step = jiff::SignedDuration::from_nanos(step_nanos);
        let mut rows = Vec::new();
        let mut start = period.start;
        while start < period.end {
            // The points of this chunk: start + k × step for k < n, all before the period's end.
            let left = period.end.duration_since(start).as_nanos();
            let n = ((left + i128::from(step_nanos) - 1) / i128::from(step_nanos))
                .min(i128::from(MAX_POINTS));
            let last = start + step * i32::try_from(n - 1).unwrap_or(i32::MAX);
            let data = self
                .get(
                    source,
                    "query_range",
                    &[
                        ("query", source.query.clone()),
                        ("start", start.to_string()),
                        ("end", last.to_string()),
                        ("step", format!("{}", source.step.as_secs_f64())),
                    ],
                )
                .await?;
            if data.result_type != "matrix" {
                return Err(PrometheusError::BadAnswer {
                    url: source.url.clone(),
                    message: format!("a {} for a range query, not a matrix", data.result_type),
                });
            }
            let series: Vec<Series> =
                serde_json::from_value(data.result).map_err(|e| PrometheusError::BadAnswer {
                    url: source.url.clone(),
                    message: e.to_string(),
                })?;
            for s in series {
                for (at, value) in s.values {
                    let amount: f64 = value.parse().map_err(|_| PrometheusError::BadAnswer {
                        url: source.url.clone(),
                        message: format!("value {value:?} is not a number"),
                    })?;
                    let at = instant(at).ok_or_else(|| PrometheusError::BadAnswer {
                        url: source.url.clone(),
                        message: format!("instant {at} is out of range"),
                    })?;
                    if amount.is_finite() && at >= period.start && at < period.end {
                        rows.push(Sample::at(amount, at, step_nanos, s.metric.clone()));
                    }
                }
            }
            start = last + step;
        }
        Ok(rows)
    }

    /// `GET <url>/api/v1/<path>?<params>`: the `data` of a successful answer.
    async fn get(
        &self,
        source: &Source,
        path: &str,
        params: &[(&str, String)],
    ) -> Result<Data, PrometheusError> {
        let url = &source.url;
        let response = self
            .http
            .get(format!("{url}/api/v1/{path}"))
            .query(params)
            .send()
            .await
            .map_err(|e| PrometheusError::Unreachable {
                url: url.clone(),
                source: e,
            })?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| PrometheusError::Unreachable {
                url: url.clone(),
                source: e,
            })?;
        // Prometheus answers errors (400 bad query, 422 failed evaluation, 503) with a JSON body.
        match serde_json::from_str::<Answer>(&body) {
            Ok(Answer {
                status: s,
                data: Some(data),
                ..
            }) if s == "success" => Ok(data),
            Ok(Answer {
                error_type: Some(error_type),
                error: Some(error),
                ..
            }) => Err(PrometheusError::Refused {
                url: url.clone(),
                query: source.query.clone(),
                error_type,
                error,
            }),
            _ if !status.is_success() => Err(PrometheusError::Status {
                url: url.clone(),
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            }),
            Ok(_) => Err(PrometheusError::BadAnswer {
                url: url.clone(),
                message: "no data in a successful answer".into(),
            }),
            Err(e) => Err(PrometheusError::BadAnswer {
                url: url.clone(),
                message: e.to_string(),
            }),
        }
    }
}

/// Prometheus' answer envelope.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    status: String,
    data: Option<Data>,
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    result: serde_json::Value,
}

/// One series of a matrix: its labels and its `[seconds, "value"]` points.
#[derive(Deserialize)]
struct Series {
    metric: BTreeMap<String, String>,
    values: Vec<(f64, String)>,
}

/// Prometheus' instants are seconds with millisecond precision.
fn instant(seconds: f64) -> Option<Timestamp> {
    Timestamp::from_millisecond((seconds * 1000.0).round() as i64).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PrometheusConfig;

    fn importer(url: Option<&str>, resolution: Option<&str>) -> PrometheusMetricsImporter {
        PrometheusMetricsImporter {
            query: "up".into(),
            prometheus_config: Some(PrometheusConfig {
                url: url.map(Into::into),
            }),
            resolution: resolution.map(Into::into),
        }
    }

    #[test]
    fn a_source_needs_an_http_url_and_a_positive_resolution() {
        let s = Source::of(&importer(Some("http://p:9090/"), None)).unwrap();
        assert_eq!((s.url.as_str(), s.step), ("http://p:9090", DEFAULT_STEP));
        let s = Source::of(&importer(Some("https://p"), Some("15s"))).unwrap();
        assert_eq!(s.step, Duration::from_secs(15));
        let err = |url, res| Source::of(&importer(url, res)).unwrap_err().to_string();
        assert!(err(None, None).contains("prometheusConfig.url is required"));
        assert!(err(Some("p:9090"), None).contains("is not an http:// or https:// URL"));
        assert!(
            err(Some("http://p"), Some("soon"))
                .starts_with("spec.prometheusMetricsImporter.resolution \"soon\": ")
        );
        assert!(err(Some("http://p"), Some("0s")).ends_with("must be at least 1ms"));
    }
}
