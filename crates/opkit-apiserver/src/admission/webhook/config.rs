//! The webhooks of the stored MutatingWebhookConfigurations and
//! ValidatingWebhookConfigurations, parsed once per change.
//!
//! A committed write of either kind bumps an epoch before its writer is answered (the
//! strategy's commit hook), and the next admission rebuilds the set from storage: so the
//! server's very next request after a configuration write sees it, as upstream's
//! informer-fed webhook source does a moment later.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1 as admreg;
use opkit_apimachinery::LabelSelector;
use serde_json::Value;

use crate::admission::reloaded::{Loaded, Reloaded, stored};
use crate::registry::Registry;
use crate::storage::Storage;
use crate::webhook_config::{Callee, Endpoint};

/// A rule's `scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    All,
    Cluster,
    Namespaced,
}

/// One `rules` entry.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) operations: Vec<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) versions: Vec<String>,
    pub(crate) resources: Vec<String>,
    pub(crate) scope: Scope,
}

/// One webhook of a configuration, with its defaults applied.
#[derive(Debug)]
pub(crate) struct Hook {
    /// The webhook's name (what error texts quote).
    pub(crate) name: String,
    /// Where it is called, with its `caBundle` and `timeoutSeconds`.
    pub(crate) callee: Callee,
    pub(crate) rules: Vec<Rule>,
    /// `failurePolicy: Ignore`.
    pub(crate) ignore_failures: bool,
    /// `matchPolicy: Exact`.
    pub(crate) exact: bool,
    pub(crate) namespace_selector: LabelSelector,
    pub(crate) object_selector: LabelSelector,
    /// `sideEffects` is `None` or `NoneOnDryRun`: dry runs may reach it.
    pub(crate) dry_run_safe: bool,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub(crate) reinvoke: bool,
    /// `matchConditions`: names and compiled expressions (or why one does not compile).
    pub(crate) conditions: Vec<(String, Result<opkit_cel::Expression, String>)>,
}

/// Every webhook, mutating and validating, in upstream's order (configurations sorted by
/// name, webhooks in their configuration's order).
#[derive(Debug, Default)]
pub(crate) struct HookSet {
    pub(crate) mutating: Vec<Hook>,
    pub(crate) validating: Vec<Hook>,
}

/// The webhooks, rebuilt from storage after a change.
pub(crate) type Webhooks = Reloaded<HookSet>;

impl Loaded for HookSet {
    fn load(storage: &Storage, registry: &Registry) -> HookSet {
        load(storage, registry)
    }
}

fn load(storage: &Storage, registry: &Registry) -> HookSet {
    let mut set = HookSet::default();
    for obj in stored(storage, registry, "mutatingwebhookconfigurations") {
        match serde_json::from_value::<admreg::MutatingWebhookConfiguration>(obj) {
            Ok(config) => {
                for h in config.webhooks.into_iter().flatten() {
                    let reinvoke = h.reinvocation_policy.as_deref() == Some("IfNeeded");
                    let mut hook = hook(Common {
                        name: h.name,
                        client: h.client_config,
                        rules: h.rules,
                        failure_policy: h.failure_policy,
                        match_policy: h.match_policy,
                        namespace_selector: h.namespace_selector,
                        object_selector: h.object_selector,
                        side_effects: h.side_effects,
                        timeout_seconds: h.timeout_seconds,
                        match_conditions: h.match_conditions,
                    });
                    hook.reinvoke = reinvoke;
                    set.mutating.push(hook);
                }
            }
            Err(e) => tracing::warn!(error = %e, "unreadable MutatingWebhookConfiguration skipped"),
        }
    }
    for obj in stored(storage, registry, "validatingwebhookconfigurations") {
        match serde_json::from_value::<admreg::ValidatingWebhookConfiguration>(obj) {
            Ok(config) => {
                for h in config.webhooks.into_iter().flatten() {
                    set.validating.push(hook(Common {
                        name: h.name,
                        client: h.client_config,
                        rules: h.rules,
                        failure_policy: h.failure_policy,
                        match_policy: h.match_policy,
                        namespace_selector: h.namespace_selector,
                        object_selector: h.object_selector,
                        side_effects: h.side_effects,
                        timeout_seconds: h.timeout_seconds,
                        match_conditions: h.match_conditions,
                    }));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "unreadable ValidatingWebhookConfiguration skipped")
            }
        }
    }
    set
}

fn selector(
    s: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> LabelSelector {
    // An absent selector matches everything (upstream's default `{}`); a stored one was
    // validated on write.
    let value = serde_json::to_value(s.unwrap_or_default()).unwrap_or(Value::Null);
    LabelSelector::from_label_selector_json(&value).unwrap_or_else(|_| LabelSelector::nothing())
}

/// What mutating and validating webhooks have in common, as k8s-openapi decodes it.
struct Common {
    name: String,
    client: admreg::WebhookClientConfig,
    rules: Option<Vec<admreg::RuleWithOperations>>,
    failure_policy: Option<String>,
    match_policy: Option<String>,
    namespace_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    object_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    side_effects: String,
    timeout_seconds: Option<i32>,
    match_conditions: Option<Vec<admreg::MatchCondition>>,
}

fn hook(h: Common) -> Hook {
    let Common {
        name,
        client,
        rules,
        failure_policy,
        match_policy,
        namespace_selector,
        object_selector,
        side_effects,
        timeout_seconds,
        match_conditions,
    } = h;
    let endpoint = Endpoint::of(
        client.url,
        client
            .service
            .map(|s| (s.namespace, s.name, s.port, s.path)),
    );
    let rules = rules
        .into_iter()
        .flatten()
        .map(|r| Rule {
            operations: r.operations.unwrap_or_default(),
            groups: r.api_groups.unwrap_or_default(),
            versions: r.api_versions.unwrap_or_default(),
            resources: r.resources.unwrap_or_default(),
            scope: match r.scope.as_deref() {
                Some("Cluster") => Scope::Cluster,
                Some("Namespaced") => Scope::Namespaced,
                _ => Scope::All,
            },
        })
        .collect();
    Hook {
        name,
        callee: Callee {
            endpoint,
            ca_bundle: client.ca_bundle.map(|b| b.0).unwrap_or_default(),
            timeout: Duration::from_secs(timeout_seconds.map_or(10, |t| t.clamp(1, 30) as u64)),
        },
        rules,
        ignore_failures: failure_policy.as_deref() == Some("Ignore"),
        exact: match_policy.as_deref() == Some("Exact"),
        namespace_selector: selector(namespace_selector),
        object_selector: selector(object_selector),
        dry_run_safe: matches!(side_effects.as_str(), "None" | "NoneOnDryRun"),
        reinvoke: false,
        conditions: conditions(match_conditions),
    }
}

/// Compiles `matchConditions` (validated on write; a stored one that no longer compiles fails
/// its evaluation, under the webhook's failure policy).
fn conditions(
    conditions: Option<Vec<admreg::MatchCondition>>,
) -> Vec<(String, Result<opkit_cel::Expression, String>)> {
    conditions
        .into_iter()
        .flatten()
        .map(|c| {
            let compiled = opkit_cel::Expression::compile(
                &c.expression,
                &crate::admission::MATCH_CONDITION_VARIABLES,
            );
            (c.name, compiled)
        })
        .collect()
}
