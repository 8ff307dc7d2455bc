//! Admission: the stage between a kind's strategy and storage where mutating and validating
//! admission runs (upstream's admission chain: webhooks, ValidatingAdmissionPolicy).
//!
//! Every create, update and delete passes through the chain once its strategy has prepared
//! and validated it and before it is stored. No plugin is built in yet; admission webhooks
//! and policies plug in here, and an embedder can add its own through
//! [`ServerOptions::admission`](crate::ServerOptions).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ApiError;

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

/// The admission chain: the plugins, in order.
#[derive(Default)]
pub(crate) struct Admission {
    plugins: Vec<Arc<dyn AdmissionPlugin>>,
}

impl Admission {
    /// A chain of `plugins`.
    pub(crate) fn new(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> Admission {
        Admission { plugins }
    }

    /// Runs every plugin over `obj`; the first refusal wins.
    pub(crate) fn admit(
        &self,
        request: &AdmissionRequest<'_>,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            plugin.admit(request, obj).map_err(|reason| {
                ApiError::forbidden(request.group, request.resource, request.name, reason)
            })?;
        }
        Ok(())
    }
}
