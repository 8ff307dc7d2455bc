//! Strategies: how a write becomes what is stored (upstream's `rest.RESTCreateStrategy`,
//! `RESTUpdateStrategy` and `RESTDeleteStrategy`).
//!
//! [`prepare`] is what every kind shares: server-managed metadata (uid, timestamps,
//! generation), the status-subresource rules, name and label validation, decoding into the
//! k8s-openapi type (built-in kinds) or pruning, defaulting and schema validation (custom
//! resources), and `fieldValidation`. A [`Strategy`] is what one kind adds; [`of`] is the one
//! table that says which kind has which, so the verbs in `endpoints` never name a kind.

mod crd_versions;
mod crds;
mod namespaces;
mod pods;
mod policies;
mod prepare;
mod rbac;
mod services;
mod webhooks;

pub(crate) use crds::register as register_crd;
pub(crate) use namespaces::check_namespace_open;
pub(crate) use prepare::{prepare_create, prepare_update, recheck_mutated};
pub(crate) use services::kubernetes_objects;

use serde_json::{Value, json};

use crate::api::Api;
use crate::error::{ApiError, ApiResult, Cause};
use crate::registry::Resource;
use crate::request::{Actor, Part};
use crate::storage::Storage;

/// A subresource with its own endpoint, besides `status` and `scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `serviceaccounts/token`: TokenRequest, create only.
    Token,
    /// `namespaces/finalize`: a replace of the main resource that may change
    /// `spec.finalizers`.
    Finalize,
}

/// Who decides what happens to the dependents of a deleted object when the client does not
/// say (`propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultGc {
    /// The garbage collector deletes them in the background.
    Background,
    /// They are orphaned, and the client is warned so.
    Orphan {
        /// The `Warning` sent when the client did not choose.
        warning: &'static str,
    },
}

/// What a kind's strategy says about the first delete of one of its objects.
pub(crate) enum OnDelete {
    /// The generic delete: finalizers from the options, then removal when none are left.
    Generic,
    /// Answer with the object as stored; nothing changes.
    Unchanged,
    /// Store this state (marked for deletion) instead.
    Mark(Value),
}

/// One kind's behaviour on writes. Every method has the generic behaviour as its default.
pub(crate) trait Strategy: Send + Sync {
    /// The status a new object of a kind with a status subresource starts with, whatever the
    /// client sent (`None`: no status).
    fn initial_status(&self, _obj: &Value) -> Option<Value> {
        None
    }

    /// Adjusts a new object after the generic preparation (validation, defaults that depend on
    /// the kind).
    fn prepare_create(&self, _obj: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// Adjusts an updated object of `part` after the generic preparation; `current` is as
    /// stored.
    fn prepare_update(&self, _part: Part, _current: &Value, _new: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// Checks a write of the main resource by `actor` (after preparation, before admission).
    fn validate_write(
        &self,
        _api: &Api,
        _actor: &Actor,
        _res: &Resource,
        _ns: Option<&str>,
        _obj: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Whether writes of this kind allocate from a shared pool (cluster IPs, node ports), and
    /// so are serialised under [`Api::allocation`].
    fn allocates(&self) -> bool {
        false
    }

    /// Allocates what a new object needs from the shared pools (under the allocation lock).
    fn allocate_create(
        &self,
        _storage: &Storage,
        _res: &Resource,
        _obj: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Allocates what an updated object needs, keeping what `current` holds.
    fn allocate_update(
        &self,
        _storage: &Storage,
        _res: &Resource,
        _current: &Value,
        _new: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// The subresource with its own endpoint named `name`, if this kind has one.
    fn subresource(&self, _name: &str) -> Option<Subresource> {
        None
    }

    /// What happens to dependents when a delete does not say.
    fn default_gc(&self) -> DefaultGc {
        DefaultGc::Background
    }

    /// Refuses deletes this kind never allows (before anything is read).
    fn check_delete(&self, _res: &Resource, _name: &str) -> ApiResult<()> {
        Ok(())
    }

    /// The kind's own handling of a delete of `current` (not yet being deleted, or being
    /// deleted); `gc` are the options' garbage-collector finalizers for a first delete.
    fn on_delete(&self, _current: &Value, _gc: &crate::endpoints::GcOptions) -> OnDelete {
        OnDelete::Generic
    }

    /// Finalizers the kind itself adds to every object being deleted.
    fn deletion_finalizers(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether nothing beyond `metadata.finalizers` holds back removal of an object being
    /// deleted (a namespace also waits for `spec.finalizers`).
    fn finalized(&self, _obj: &Value) -> bool {
        true
    }

    /// Whether an immediate delete answers with the deleted object (else a `Status`).
    fn delete_returns_object(&self) -> bool {
        false
    }

    /// Runs after an object of this kind was stored (`deleted: false`) or removed.
    fn committed(&self, _api: &Api, _obj: &Value, _deleted: bool) {}
}

/// Built-in kinds without behaviour of their own.
struct Builtin;
impl Strategy for Builtin {}

/// Custom resources: a delete answers with the object.
struct Custom;
impl Strategy for Custom {
    fn delete_returns_object(&self) -> bool {
        true
    }
}

/// Nodes: a new node keeps the status it is created with (the simulated kubelet writes it).
struct Nodes;
impl Strategy for Nodes {
    fn initial_status(&self, obj: &Value) -> Option<Value> {
        obj.get("status").cloned()
    }
}

/// PersistentVolumeClaims: they start `Pending`.
struct PersistentVolumeClaims;
impl Strategy for PersistentVolumeClaims {
    fn initial_status(&self, _obj: &Value) -> Option<Value> {
        Some(json!({"phase": "Pending"}))
    }
}

/// ServiceAccounts: the TokenRequest subresource.
struct ServiceAccounts;
impl Strategy for ServiceAccounts {
    fn subresource(&self, name: &str) -> Option<Subresource> {
        (name == "token").then_some(Subresource::Token)
    }
}

/// batch/v1 Jobs: upstream keeps orphaning as their default for backward compatibility (as
/// for v1 ReplicationControllers, which are not served here).
struct Jobs;
impl Strategy for Jobs {
    fn default_gc(&self) -> DefaultGc {
        DefaultGc::Orphan {
            warning: "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning",
        }
    }
}

/// Which review API a create-only review resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    /// TokenReview: whether a token authenticates.
    Token,
    /// SelfSubjectReview: who the requester is.
    SelfSubject,
    /// SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview,
    /// SelfSubjectRulesReview: what a user may do.
    Access,
}

/// The review API of a review resource ([`Resource::is_review`]).
/// A 422 `Invalid` for `obj` with `causes`, or `Ok` when there are none.
pub(crate) fn invalid_if_any(res: &Resource, obj: &Value, causes: Vec<Cause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(
        &res.group,
        &res.kind,
        crate::object::name(obj),
        causes,
    ))
}

pub(crate) fn review(res: &Resource) -> Review {
    match (res.group.as_str(), res.plural.as_str()) {
        ("authentication.k8s.io", "tokenreviews") => Review::Token,
        ("authentication.k8s.io", _) => Review::SelfSubject,
        _ => Review::Access,
    }
}

/// The strategy of a resource: the one place that says which kind behaves how.
pub(crate) fn of(res: &Resource) -> &'static dyn Strategy {
    if res.is_custom() {
        return &Custom;
    }
    match (
        res.group.as_str(),
        res.version.as_str(),
        res.plural.as_str(),
    ) {
        ("", _, "namespaces") => &namespaces::Namespaces,
        ("", _, "nodes") => &Nodes,
        ("", _, "persistentvolumeclaims") => &PersistentVolumeClaims,
        ("", _, "pods") => &pods::Pods,
        ("", _, "services") => &services::Services,
        ("", _, "serviceaccounts") => &ServiceAccounts,
        ("batch", "v1", "jobs") => &Jobs,
        ("apiextensions.k8s.io", _, "customresourcedefinitions") => &crds::Crds,
        (opkit_rbac::RBAC_GROUP, _, _) => &rbac::Rbac,
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies" | "validatingadmissionpolicybindings",
        ) => &policies::Policies,
        ("admissionregistration.k8s.io", "v1", _) => &webhooks::WebhookConfigurations,
        _ => &Builtin,
    }
}
