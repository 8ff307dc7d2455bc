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
//!
//! `prometheusConfig` says how to connect, with Operator Metering's settings: the CA of an
//! `https://` server from a ConfigMap key (`certificateAuthority.configMap`), a bearer token from
//! a Secret key (`auth.tokenSecret`), or `insecureSkipVerify`. They are read from the data
//! source's namespace each time a source is resolved ([`Prometheus::source`]), so a rotated
//! token or CA is picked up at the next check or import.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use opkit_metering::{Period, Sample};
use serde::Deserialize;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use reqwest::header::{AUTHORIZATION, HeaderValue};

use crate::api::PrometheusMetricsImporter;

/// The step when a source gives no `resolution`: Metering's import step.
const DEFAULT_STEP: Duration = Duration::from_secs(60);

/// The most points asked for per series in one range query (Prometheus refuses above 11,000).
const MAX_POINTS: u32 = 10_000;

/// How long one request to Prometheus may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The ConfigMap key of a CA bundle when `filename` is absent.
const DEFAULT_CA_KEY: &str = "ca.crt";

/// The Secret key of a token when `key` is absent.
const DEFAULT_TOKEN_KEY: &str = "token";

const CONFIG: &str = "spec.prometheusMetricsImporter.prometheusConfig";

/// Why a Prometheus source gave no rows.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PrometheusError {
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig.url is required: the Prometheus server's base URL, e.g. \
         http://prometheus.monitoring:9090"
    )]
    NoUrl,
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig.url {0:?} is not an http:// or https:// URL"
    )]
    BadUrl(String),
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig.{field} needs an https:// url (got {url:?})"
    )]
    TlsWithoutHttps { field: &'static str, url: String },
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig: insecureSkipVerify and certificateAuthority contradict each other (set one)"
    )]
    InsecureWithCa,
    #[error("spec.prometheusMetricsImporter.resolution {value:?}: {message}")]
    BadResolution { value: String, message: String },
    #[error(
        "spec.prometheusMetricsImporter.prometheusConfig.certificateAuthority.configMap: {message}"
    )]
    Ca { message: String },
    #[error("spec.prometheusMetricsImporter.prometheusConfig.auth.tokenSecret: {message}")]
    Token { message: String },
    #[error("cannot build an HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot reach Prometheus at {url}: {message}")]
    Unreachable { url: String, message: String },
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

impl PrometheusError {
    /// The reason of a data source's `Ready` condition for this error.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            PrometheusError::NoUrl
            | PrometheusError::BadUrl(_)
            | PrometheusError::TlsWithoutHttps { .. }
            | PrometheusError::InsecureWithCa
            | PrometheusError::BadResolution { .. } => "InvalidSpec",
            PrometheusError::Ca { .. } | PrometheusError::Token { .. } => {
                "PrometheusConfigUnresolved"
            }
            _ => "PrometheusQueryFailed",
        }
    }
}

/// A source's settings, checked (nothing read from the cluster yet).
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    url: String,
    query: String,
    step: Duration,
}

impl Settings {
    /// The settings a `prometheusMetricsImporter` gives.
    pub(crate) fn of(importer: &PrometheusMetricsImporter) -> Result<Settings, PrometheusError> {
        let config = importer.prometheus_config.as_ref();
        let url = config
            .and_then(|c| c.url.as_deref())
            .filter(|u| !u.is_empty())
            .ok_or(PrometheusError::NoUrl)?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(PrometheusError::BadUrl(url.to_owned()));
        }
        if let Some(config) = config {
            if config.insecure_skip_verify && config.certificate_authority.is_some() {
                return Err(PrometheusError::InsecureWithCa);
            }
            let tls_field = if config.insecure_skip_verify {
                Some("insecureSkipVerify")
            } else {
                config
                    .certificate_authority
                    .as_ref()
                    .map(|_| "certificateAuthority")
            };
            if let Some(field) = tls_field
                && !url.starts_with("https://")
            {
                return Err(PrometheusError::TlsWithoutHttps {
                    field,
                    url: url.to_owned(),
                });
            }
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
        Ok(Settings {
            url: url.trim_end_matches('/').to_owned(),
            query: importer.query.clone(),
            step,
        })
    }
}

/// One source, resolved: its settings, the client that connects as they say (the CA, or no
/// verification) and the `Authorization` header to send.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    settings: Settings,
    http: reqwest::Client,
    authorization: Option<HeaderValue>,
    /// Where the CA came from (`ConfigMap ns/name key`), for the error of a refused certificate.
    ca: Option<String>,
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

    /// The source `importer` describes, with its CA and token read from `namespace`.
    pub(crate) async fn source(
        &self,
        client: &kube::Client,
        namespace: &str,
        importer: &PrometheusMetricsImporter,
    ) -> Result<Source, PrometheusError> {
        let settings = Settings::of(importer)?;
        let config = importer.prometheus_config.clone().unwrap_or_default();
        let mut ca = None;
        let http = if let Some(authority) = &config.certificate_authority {
            let map = &authority.config_map;
            let key = map.filename.as_deref().unwrap_or(DEFAULT_CA_KEY);
            let err = |message: String| PrometheusError::Ca { message };
            let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let found = configmaps
                .get_opt(&map.name)
                .await
                .map_err(|e| {
                    err(format!(
                        "cannot read ConfigMap {namespace}/{}: {e}",
                        map.name
                    ))
                })?
                .ok_or_else(|| err(format!("ConfigMap {namespace}/{} does not exist", map.name)))?;
            let pem = found
                .data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|s| s.as_bytes().to_vec())
                .or_else(|| {
                    found
                        .binary_data
                        .as_ref()
                        .and_then(|d| d.get(key))
                        .map(|b| b.0.clone())
                })
                .ok_or_else(|| {
                    err(format!(
                        "ConfigMap {namespace}/{} has no key {key:?}",
                        map.name
                    ))
                })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| {
                    err(format!(
                        "key {key:?} of ConfigMap {namespace}/{} holds no PEM certificate",
                        map.name
                    ))
                })?;
            ca = Some(format!("ConfigMap {namespace}/{} key {key:?}", map.name));
            reqwest::Client::builder()
                .timeout(TIMEOUT)
                .tls_certs_only(certs)
                .build()
                .map_err(PrometheusError::Client)?
        } else if config.insecure_skip_verify {
            reqwest::Client::builder()
                .timeout(TIMEOUT)
                .tls_danger_accept_invalid_certs(true)
                .build()
                .map_err(PrometheusError::Client)?
        } else {
            self.http.clone()
        };
        let authorization = match &config.auth {
            None => None,
            Some(auth) => {
                let secret = &auth.token_secret;
                let key = secret.key.as_deref().unwrap_or(DEFAULT_TOKEN_KEY);
                let err = |message: String| PrometheusError::Token { message };
                let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
                let found = secrets
                    .get_opt(&secret.name)
                    .await
                    .map_err(|e| {
                        err(format!(
                            "cannot read Secret {namespace}/{}: {e}",
                            secret.name
                        ))
                    })?
                    .ok_or_else(|| {
                        err(format!("Secret {namespace}/{} does not exist", secret.name))
                    })?;
                let bytes = found
                    .data
                    .as_ref()
                    .and_then(|d| d.get(key))
                    .ok_or_else(|| {
                        err(format!(
                            "Secret {namespace}/{} has no key {key:?}",
                            secret.name
                        ))
                    })?;
                let mut header = std::str::from_utf8(&bytes.0)
                    .ok()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .and_then(|t| HeaderValue::from_str(&format!("Bearer {t}")).ok())
                    .ok_or_else(|| {
                        err(format!(
                            "key {key:?} of Secret {namespace}/{} is empty or not a token \
                             (printable ASCII)",
                            secret.name
                        ))
                    })?;
                header.set_sensitive(true);
                Some(header)
            }
        };
        Ok(Source {
            settings,
            http,
            authorization,
            ca,
        })
    }

    /// Evaluates the source's query once, now: Prometheus is reachable and the query parses.
    pub(crate) async fn check(&self, source: &Source) -> Result<(), PrometheusError> {
        self.get(source, "query", &[("query", source.settings.query.clone())])
            .await
            .map(drop)
    }

    /// The source's rows for `period`.
    pub(crate) async fn import(
        &self,
        source: &Source,
        period: Period,
    ) -> Result<Vec<Sample>, PrometheusError> {
        let settings = &source.settings;
        let step_nanos = i64::try_from(settings.step.as_nanos()).unwrap_or(i64::MAX);
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
                        ("query", settings.query.clone()),
                        ("start", start.to_string()),
                        ("end", last.to_string()),
                        ("step", format!("{}", settings.step.as_secs_f64())),
                    ],
                )
                .await?;
            if data.result_type != "matrix" {
                return Err(PrometheusError::BadAnswer {
                    url: settings.url.clone(),
                    message: format!("a {} for a range query, not a matrix", data.result_type),
                });
            }
            let series: Vec<Series> =
                serde_json::from_value(data.result).map_err(|e| PrometheusError::BadAnswer {
                    url: settings.url.clone(),
                    message: e.to_string(),
                })?;
            for s in series {
                for (at, value) in s.values {
                    let amount: f64 = value.parse().map_err(|_| PrometheusError::BadAnswer {
                        url: settings.url.clone(),
                        message: format!("value {value:?} is not a number"),
                    })?;
                    let at = instant(at).ok_or_else(|| PrometheusError::BadAnswer {
                        url: settings.url.clone(),
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
        let url = &source.settings.url;
        let mut request = source
            .http
            .get(format!("{url}/api/v1/{path}"))
            .query(params);
        if let Some(authorization) = &source.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let unreachable = |e: reqwest::Error| PrometheusError::Unreachable {
            url: url.clone(),
            message: explain(&e, source.ca.as_deref()),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let body = response.text().await.map_err(unreachable)?;
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
                query: source.settings.query.clone(),
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

/// `error` with its causes (reqwest's own words say only that sending failed), and what to
/// do when the server's certificate was refused.
fn explain(error: &reqwest::Error, ca: Option<&str>) -> String {
    let mut message = error.to_string();
    let mut refused_certificate = false;
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        message.push_str(": ");
        message.push_str(&e.to_string());
        if let Some(rustls::Error::InvalidCertificate(_)) = tls_error(e) {
            refused_certificate = true;
        }
        cause = e.source();
    }
    if refused_certificate {
        message.push_str(&match ca {
            Some(ca) => format!(
                " (the server's certificate is not valid for the CA in {ca}: is it the CA that \
                 signed it, for this host?)"
            ),
            None => format!(
                " (the server's certificate is not signed by a CA this process trusts: set \
                 {CONFIG}.certificateAuthority.configMap to the CA that signed it)"
            ),
        });
    }
    message
}

/// The rustls error `e` is or wraps: it travels inside io::Errors (two, from hyper's
/// connector), whose `source` skips it.
fn tls_error<'a>(mut e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    loop {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        e = e.downcast_ref::<std::io::Error>()?.get_ref()?;
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
    use crate::api::{CaConfigMap, PrometheusCertificateAuthority, PrometheusConfig};

    fn importer(url: Option<&str>, resolution: Option<&str>) -> PrometheusMetricsImporter {
        PrometheusMetricsImporter {
            query: "up".into(),
            prometheus_config: Some(PrometheusConfig {
                url: url.map(Into::into),
                ..PrometheusConfig::default()
            }),
            resolution: resolution.map(Into::into),
        }
    }

    #[test]
    fn a_source_needs_an_http_url_and_a_positive_resolution() {
        let s = Settings::of(&importer(Some("http://p:9090/"), None)).unwrap();
        assert_eq!((s.url.as_str(), s.step), ("http://p:9090", DEFAULT_STEP));
        let s = Settings::of(&importer(Some("https://p"), Some("15s"))).unwrap();
        assert_eq!(s.step, Duration::from_secs(15));
        let err = |url, res| Settings::of(&importer(url, res)).unwrap_err().to_string();
        assert!(err(None, None).contains("prometheusConfig.url is required"));
        assert!(err(Some("p:9090"), None).contains("is not an http:// or https:// URL"));
        assert!(
            err(Some("http://p"), Some("soon"))
                .starts_with("spec.prometheusMetricsImporter.resolution \"soon\": ")
        );
        assert!(err(Some("http://p"), Some("0s")).ends_with("must be at least 1ms"));
    }

    #[test]
    fn tls_settings_need_https_and_exclude_each_other() {
        let with = |url: &str, ca: bool, insecure: bool| {
            let mut i = importer(Some(url), None);
            let config = i.prometheus_config.as_mut().unwrap();
            config.insecure_skip_verify = insecure;
            config.certificate_authority = ca.then(|| PrometheusCertificateAuthority {
                config_map: CaConfigMap {
                    name: "ca".into(),
                    filename: None,
                },
            });
            Settings::of(&i)
                .map(drop)
                .map_err(|e| (e.reason(), e.to_string()))
        };
        assert!(with("https://p", true, false).is_ok());
        assert!(with("https://p", false, true).is_ok());
        assert_eq!(
            with("http://p", true, false).unwrap_err(),
            (
                "InvalidSpec",
                "spec.prometheusMetricsImporter.prometheusConfig.certificateAuthority needs an \
                 https:// url (got \"http://p\")"
                    .to_owned()
            )
        );
        assert!(
            with("http://p", false, true)
                .unwrap_err()
                .1
                .contains(".insecureSkipVerify needs an https:// url")
        );
        assert!(with("https://p", true, true).unwrap_err().1.ends_with(
            "insecureSkipVerify and certificateAuthority contradict each other (set one)"
        ));
    }
}
