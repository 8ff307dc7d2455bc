//! Admission: the stage between a kind's strategy and storage where mutating and validating
//! admission runs (upstream's admission chain).
//!
//! Every create, update and delete passes through it once its strategy has prepared it and
//! before it is stored, in upstream's order: mutating admission webhooks (`webhook`), then
//! validation of what they produced (the endpoints call `strategy::recheck_mutated`; while no
//! mutating webhook is configured, the preparation validated already), the plugins an
//! embedder adds through [`ServerOptions::admission`](crate::ServerOptions), then
//! ValidatingAdmissionPolicies (`policy`), then validating admission webhooks.

pub(crate) mod policy;
mod reloaded;
mod webhook;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::api::Api;
use crate::error::{ApiError, ApiResult};
use crate::registry::Resource;

/// The variables a webhook's `matchConditions` see (upstream also declares `authorizer`, which
/// this control plane does not provide: an expression using it does not compile).
pub(crate) const MATCH_CONDITION_VARIABLES: [&str; 3] = ["object", "oldObject", "request"];

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A change to an existing object (or to its `status`).
    Update,
    /// A delete of one object.
    Delete,
}

/// What an admission plugin sees of a write.
#[derive(Debug)]
pub struct AdmissionRequest<'a> {
    /// What happens.
    pub operation: Operation,
    /// The API group (empty for core).
    pub group: &'a str,
    /// The version of the endpoint written to.
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource written (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The namespace, for namespaced resources.
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
    /// Who writes; `None` for the server's own writes.
    pub user: Option<&'a opkit_rbac::UserInfo>,
    /// The object as stored before the write (updates and deletes).
    pub old: Option<&'a Value>,
    /// Whether this is a dry run (plugins with side effects must not act on it).
    pub dry_run: bool,
}

/// One admission plugin: may change the object (mutating) and may refuse the write.
pub trait AdmissionPlugin: Send + Sync + fmt::Debug {
    /// Admits `obj` (the object to be stored; for a delete, the object as it is), or refuses
    /// the write with the reason, which the client gets as a `403 Forbidden` Status.
    fn admit(&self, request: &AdmissionRequest<'_>, obj: &mut Value) -> Result<(), String>;
}

/// The admission chain: the webhooks and the embedder's plugins.
#[derive(Default)]
pub(crate) struct Admission {
    plugins: Vec<Arc<dyn AdmissionPlugin>>,
    webhooks: webhook::Webhooks,
    policies: policy::config::Policies,
}

impl Admission {
    /// A chain with the embedder's `plugins`.
    pub(crate) fn new(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> Admission {
        Admission {
            plugins,
            webhooks: webhook::Webhooks::default(),
            policies: policy::config::Policies::default(),
        }
    }

    fn webhooks(&self) -> &webhook::Webhooks {
        &self.webhooks
    }

    /// Whether any mutating webhook is configured (so a write keeps its unmutated form).
    pub(crate) fn has_mutating_webhooks(&self, api: &Api) -> bool {
        !self
            .webhooks
            .current(&api.storage, &api.registry)
            .mutating
            .is_empty()
    }

    /// A webhook configuration was written: the next write reads them again.
    pub(crate) fn webhooks_changed(&self) {
        self.webhooks.invalidate();
    }

    /// A ValidatingAdmissionPolicy or binding was written: the next write reads them again.
    pub(crate) fn policies_changed(&self) {
        self.policies.invalidate();
    }

    /// Mutating admission: the mutating webhooks change `obj` (the object to be stored;
    /// `None` for a delete). Returns whether they changed it, so that the caller validates it
    /// again.
    pub(crate) async fn mutate(
        api: &Api,
        res: &Resource,
        request: &AdmissionRequest<'_>,
        obj: Option<&mut Value>,
        warnings: &mut Vec<String>,
    ) -> ApiResult<bool> {
        let write = webhook::Write { api, res, request };
        webhook::mutate(&write, obj, warnings).await
    }

    /// Validating admission: the embedder's plugins (which may still change `obj`, the object
    /// to be stored or, for a delete, the object as it is), then the ValidatingAdmissionPolicies
    /// and the validating webhooks (which see `None` for a delete's object, as upstream sends
    /// it).
    pub(crate) async fn validate(
        api: &Api,
        res: &Resource,
        request: &AdmissionRequest<'_>,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> ApiResult<()> {
        for plugin in &api.admission.plugins {
            plugin.admit(request, obj).map_err(|reason| {
                ApiError::forbidden(request.group, request.resource, request.name, reason)
            })?;
        }
        let write = webhook::Write { api, res, request };
        let object = (request.operation != Operation::Delete).then_some(&*obj);
        policy::validate(&write, object, warnings).await?;
        webhook::validate(&write, object, warnings).await
    }
}
