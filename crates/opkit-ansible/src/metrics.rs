//! Metrics a role reports with `operator_sdk.util.osdk_metric`, served on the operator's
//! `/metrics` next to the runtime's (upstream's `HandleUserMetric`).
//!
//! A metric is registered on first use with its kind (counter, gauge or histogram with
//! Prometheus' default buckets) and keeps that kind: a later update of another kind is an
//! error, as upstream. Updates are applied in the order the run's tasks made them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use serde_json::Value;

/// Prometheus' default histogram buckets.
const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Clone)]
enum Metric {
    Counter(Counter<f64, std::sync::atomic::AtomicU64>),
    Gauge(Gauge<f64, std::sync::atomic::AtomicU64>),
    Histogram(Histogram),
}

impl Metric {
    fn kind(&self) -> &'static str {
        match self {
            Metric::Counter(_) => "counter",
            Metric::Gauge(_) => "gauge",
            Metric::Histogram(_) => "histogram",
        }
    }
}

/// The user metrics of one operator, registered in the manager's registry.
#[derive(Clone)]
pub(crate) struct UserMetrics {
    registry: opkit::metrics::Metrics,
    metrics: Arc<Mutex<HashMap<String, Metric>>>,
}

impl UserMetrics {
    pub(crate) fn new(registry: opkit::metrics::Metrics) -> UserMetrics {
        UserMetrics {
            registry,
            metrics: Arc::default(),
        }
    }

    /// Applies one `osdk_metric` result (`name`, `description` and one of `counter`,
    /// `gauge`, `histogram`).
    pub(crate) fn apply(&self, update: &Value) -> Result<(), String> {
        let name = update["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or("an osdk_metric update without a name")?;
        let help = update["description"].as_str().unwrap_or_default();
        let (kind, args) = ["counter", "gauge", "histogram"]
            .into_iter()
            .find_map(|k| update.get(k).filter(|v| v.is_object()).map(|v| (k, v)))
            .ok_or_else(|| format!("metric {name}: no counter, gauge or histogram"))?;
        let mut metrics = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        let metric = match metrics.get(name) {
            Some(m) => m.clone(),
            None => {
                let m = match kind {
                    "counter" => Metric::Counter(Counter::default()),
                    "gauge" => Metric::Gauge(Gauge::default()),
                    _ => Metric::Histogram(Histogram::new(BUCKETS)),
                };
                self.registry.with_registry(|r| match &m {
                    Metric::Counter(c) => r.register(name, help, c.clone()),
                    Metric::Gauge(g) => r.register(name, help, g.clone()),
                    Metric::Histogram(h) => r.register(name, help, h.clone()),
                });
                metrics.insert(name.to_string(), m.clone());
                m
            }
        };
        if metric.kind() != kind {
            return Err(format!(
                "cannot change metric type of {name}, which is a {}",
                metric.kind()
            ));
        }
        let num = |key: &str| args[key].as_f64();
        let flag = |key: &str| args[key].as_bool().unwrap_or(false);
        match metric {
            Metric::Counter(c) => {
                if flag("increment") {
                    c.inc();
                } else if let Some(add) = num("add") {
                    if add < 0.0 {
                        return Err("counter metrics cannot decrease in value".into());
                    }
                    c.inc_by(add);
                }
            }
            Metric::Gauge(g) => {
                if flag("increment") {
                    g.inc();
                } else if flag("decrement") {
                    g.dec();
                } else if let Some(add) = num("add") {
                    g.inc_by(add);
                } else if let Some(sub) = num("subtract") {
                    g.dec_by(sub);
                } else if let Some(set) = num("set") {
                    g.set(set);
                } else if flag("set_to_current_time") {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64());
                    g.set(now);
                }
            }
            Metric::Histogram(h) => {
                if let Some(v) = num("observe") {
                    h.observe(v);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_reach_the_registry_and_keep_their_kind() {
        let registry = opkit::metrics::Metrics::new();
        let m = UserMetrics::new(registry.clone());
        m.apply(&json!({"name": "jobs", "description": "Jobs", "counter": {"increment": true}}))
            .expect("counter");
        m.apply(&json!({"name": "jobs", "description": "Jobs", "counter": {"add": 2.5}}))
            .expect("add");
        m.apply(&json!({"name": "depth", "description": "Depth", "gauge": {"set": 7.0}}))
            .expect("gauge");
        m.apply(&json!({"name": "lat", "description": "Latency", "histogram": {"observe": 0.2}}))
            .expect("histogram");
        let text = registry.render();
        assert!(text.contains("jobs_total 3.5"), "{text}");
        assert!(text.contains("depth 7.0"), "{text}");
        assert!(text.contains("lat_count 1"), "{text}");
        let err = m
            .apply(&json!({"name": "jobs", "description": "", "gauge": {"set": 1.0}}))
            .expect_err("kind change");
        assert!(err.contains("which is a counter"), "{err}");
        let err = m
            .apply(&json!({"name": "jobs", "description": "", "counter": {"add": -1.0}}))
            .expect_err("negative");
        assert!(err.contains("cannot decrease"), "{err}");
    }
}
