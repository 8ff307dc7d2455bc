//! How the control plane's outgoing webhooks are configured: upstream's `WebhookClientConfig`
//! (a `url`, or a `service` with `namespace`, `name`, `path` and `port`, and a `caBundle`),
//! which admission webhooks and CRD conversion share, and a CRD's `spec.conversion`.
//!
//! Vocabulary only, parsed from stored objects (validated when they were written): the
//! registry keeps a CRD's conversion with its versions, `webhook_client` calls a [`Callee`],
//! and the conversion module converts.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// Where a webhook is reached (`clientConfig.url` or `clientConfig.service`).
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        port: u16,
        path: String,
    },
}

impl Endpoint {
    /// The endpoint of a `clientConfig`: its `url`, or its `service` as (`namespace`, `name`,
    /// `port` (443 when unset), `path`). Validation refuses a configuration with neither; an
    /// empty URL fails every call.
    pub(crate) fn of(
        url: Option<String>,
        service: Option<(String, String, Option<i32>, Option<String>)>,
    ) -> Endpoint {
        match (url, service) {
            (Some(url), _) => Endpoint::Url(url),
            (None, Some((namespace, name, port, path))) => Endpoint::Service {
                namespace,
                name,
                port: port.and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
                path: path.unwrap_or_default(),
            },
            (None, None) => Endpoint::Url(String::new()),
        }
    }
}

/// One webhook as the client calls it: where, whom to trust, how long to wait.
#[derive(Debug, Clone)]
pub(crate) struct Callee {
    pub(crate) endpoint: Endpoint,
    /// `clientConfig.caBundle` (PEM), the only trust root of calls to it.
    pub(crate) ca_bundle: Vec<u8>,
    pub(crate) timeout: Duration,
}

/// How long a conversion webhook may take (upstream's client sends `?timeout=30s`).
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The ConversionReview versions this server speaks, in the order it prefers them.
pub(crate) const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// How the objects of one CRD move between its versions (`spec.conversion.strategy`).
#[derive(Debug, Clone)]
pub enum Conversion {
    /// `None`: only `apiVersion` changes.
    None,
    /// `Webhook`: the CRD's conversion webhook converts.
    Webhook(Arc<ConversionWebhook>),
}

/// A CRD's conversion webhook (`spec.conversion.webhook`).
#[derive(Debug)]
pub struct ConversionWebhook {
    pub(crate) callee: Callee,
    /// The ConversionReview version it is sent (`v1` when it accepts it, else `v1beta1`).
    pub(crate) review_version: &'static str,
}

impl Conversion {
    /// The conversion of a stored CRD (validated when it was written).
    pub(crate) fn of(crd: &Value) -> Conversion {
        let conversion = crd.pointer("/spec/conversion");
        if conversion
            .and_then(|c| c.get("strategy"))
            .and_then(Value::as_str)
            != Some("Webhook")
        {
            return Conversion::None;
        }
        let webhook = conversion.and_then(|c| c.get("webhook"));
        let client = webhook.and_then(|w| w.get("clientConfig"));
        let text = |v: Option<&Value>, key: &str| {
            v.and_then(|v| v.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let service = client
            .and_then(|c| c.get("service"))
            .filter(|s| !s.is_null())
            .map(|s| {
                (
                    text(Some(s), "namespace").unwrap_or_default(),
                    text(Some(s), "name").unwrap_or_default(),
                    s.get("port")
                        .and_then(Value::as_i64)
                        .and_then(|p| i32::try_from(p).ok()),
                    text(Some(s), "path"),
                )
            });
        let ca_bundle = text(client, "caBundle")
            .and_then(|b| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .unwrap_or_default();
        let accepted: Vec<&str> = webhook
            .and_then(|w| w.get("conversionReviewVersions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let review_version = REVIEW_VERSIONS
            .iter()
            .find(|v| accepted.contains(v))
            .copied()
            .unwrap_or("v1");
        Conversion::Webhook(Arc::new(ConversionWebhook {
            callee: Callee {
                endpoint: Endpoint::of(text(client, "url"), service),
                ca_bundle,
                timeout: WEBHOOK_TIMEOUT,
            },
            review_version,
        }))
    }
}
