//! Authorization: RBAC on every request, with upstream's semantics and messages.
//!
//! The policy engine is the `opkit-rbac` crate; this module feeds it. The Roles, ClusterRoles
//! and bindings are read from the store into an immutable [`Policy`] that every request shares;
//! any write under the RBAC key prefix bumps an epoch (synchronously, after the commit and
//! before the writer is answered), and the next request rebuilds the policy. So a client that
//! has just created a RoleBinding can use it with its very next request, which tests rely on.
//!
//! Besides the per-request check, this module does what upstream's RBAC storage and
//! authorization APIs do: escalation prevention on Role/ClusterRole/binding writes,
//! impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`), the access reviews
//! (SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview,
//! SelfSubjectRulesReview), and the default policy a fresh cluster starts with.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use opkit_rbac::{Decision, Policy};
use serde_json::{Value, json};

use crate::auth::User;
use crate::error::{ApiError, ApiResult};
use crate::registry::Registry;
use crate::request::Attributes;
use crate::storage::Storage;

const RBAC_GROUP: &str = opkit_rbac::RBAC_GROUP;

/// The authorizer: RBAC over the Roles and bindings in storage, with the policy shared by every
/// request and rebuilt lazily after a change.
pub(crate) struct Authorizer {
    storage: Arc<Storage>,
    registry: Arc<Registry>,
    epoch: AtomicU64,
    cached: Mutex<Option<(u64, Arc<Policy>)>>,
}

impl Authorizer {
    /// An authorizer over the RBAC objects in `storage`.
    pub(crate) fn new(storage: Arc<Storage>, registry: Arc<Registry>) -> Authorizer {
        Authorizer {
            storage,
            registry,
            epoch: AtomicU64::new(0),
            cached: Mutex::new(None),
        }
    }

    /// Marks the policy stale: an RBAC object was written.
    pub fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The current RBAC policy (rebuilt from the store after RBAC writes).
    pub(crate) fn policy(&self) -> Arc<Policy> {
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut cached = match self.cached.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((at, policy)) = cached.as_ref()
            && *at == epoch
        {
            return policy.clone();
        }
        let policy = Arc::new(self.build_policy());
        *cached = Some((epoch, policy.clone()));
        policy
    }

    fn build_policy(&self) -> Policy {
        let snapshot = self.registry.snapshot();
        let list = |plural: &str| -> Vec<opkit_store::Entry> {
            let Some(res) = snapshot.get(RBAC_GROUP, "v1", plural) else {
                return Vec::new();
            };
            self.storage
                .list(res, None, &opkit_store::ListOptions::default())
                .map(|r| r.entries)
                .unwrap_or_default()
        };
        Policy::new(
            parse_all::<ClusterRole>(list("clusterroles")),
            parse_all::<Role>(list("roles")),
            parse_all::<ClusterRoleBinding>(list("clusterrolebindings")),
            parse_all::<RoleBinding>(list("rolebindings")),
        )
    }

    /// Whether `user` may do what `attrs` describe.
    pub(crate) fn allowed(&self, user: &User, attrs: &Attributes) -> Decision {
        if user.in_group(opkit_rbac::SYSTEM_MASTERS) {
            return Decision::Allow;
        }
        self.policy().authorize(user, &attrs.as_request())
    }

    /// 403 unless `user` may do what `attrs` describe.
    pub(crate) fn authorize(&self, user: &User, attrs: &Attributes) -> ApiResult<()> {
        match self.allowed(user, attrs) {
            Decision::Allow => Ok(()),
            Decision::Deny { reason } => Err(attrs.forbidden(user, &reason)),
        }
    }

    /// Answers an access review (`authorization.k8s.io/v1`): SubjectAccessReview,
    /// SelfSubjectAccessReview, LocalSubjectAccessReview or SelfSubjectRulesReview.
    pub(crate) fn access_review(
        &self,
        plural: &str,
        path_ns: Option<&str>,
        requester: &User,
        review: &Value,
    ) -> ApiResult<Value> {
        let kind = match plural {
            "subjectaccessreviews" => "SubjectAccessReview",
            "selfsubjectaccessreviews" => "SelfSubjectAccessReview",
            "localsubjectaccessreviews" => "LocalSubjectAccessReview",
            "selfsubjectrulesreviews" => "SelfSubjectRulesReview",
            _ => return Err(ApiError::path_not_found()),
        };
        let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
        let invalid = |field: &str, message: &str| {
            ApiError::invalid(
                "authorization.k8s.io",
                kind,
                "",
                vec![crate::error::Cause::new(
                    "FieldValueRequired",
                    field,
                    message,
                )],
            )
        };
        let subject: User = match plural {
            "subjectaccessreviews" | "localsubjectaccessreviews" => {
                let name = spec.get("user").and_then(Value::as_str).unwrap_or("");
                let groups: Vec<String> = spec
                    .get("groups")
                    .and_then(Value::as_array)
                    .map(|g| {
                        g.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                if name.is_empty() && groups.is_empty() {
                    return Err(invalid(
                        "spec.user",
                        "at least one of user or group must be specified",
                    ));
                }
                User {
                    name: name.to_string(),
                    uid: spec
                        .get("uid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    groups,
                    extra: spec
                        .get("extra")
                        .and_then(|e| serde_json::from_value(e.clone()).ok())
                        .unwrap_or_default(),
                }
            }
            _ => requester.clone(),
        };
        let mut out = review.clone();
        out["apiVersion"] = json!("authorization.k8s.io/v1");
        out["kind"] = json!(kind);
        if out.get("metadata").is_none_or(Value::is_null) {
            out["metadata"] = json!({});
        }
        out["metadata"]["creationTimestamp"] = Value::Null;
        if plural == "selfsubjectrulesreviews" {
            let ns = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
            let review = self
                .policy()
                .rules_for(&subject, Some(ns).filter(|n| !n.is_empty()));
            out["status"] = rules_review_status(review);
            return Ok(out);
        }
        let attrs = if let Some(ra) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
            let s = |k: &str| ra.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let mut namespace = s("namespace");
            if plural == "localsubjectaccessreviews" {
                let path_ns = path_ns.unwrap_or("");
                if namespace.is_empty() {
                    namespace = path_ns.to_string();
                    out["spec"]["resourceAttributes"]["namespace"] = json!(path_ns);
                } else if namespace != path_ns {
                    return Err(ApiError::invalid(
                        "authorization.k8s.io",
                        kind,
                        "",
                        vec![crate::error::Cause::new(
                            "FieldValueInvalid",
                            "spec.resourceAttributes.namespace",
                            format!(
                                "Invalid value: \"{namespace}\": must match metadata.namespace"
                            ),
                        )],
                    ));
                }
            }
            let opt = |v: String| Some(v).filter(|v| !v.is_empty());
            Attributes::Resource {
                verb: s("verb"),
                group: s("group"),
                version: s("version"),
                resource: s("resource"),
                subresource: opt(s("subresource")),
                namespace: opt(namespace),
                name: opt(s("name")),
            }
        } else if let Some(nra) = spec.get("nonResourceAttributes").filter(|v| !v.is_null()) {
            let s = |k: &str| nra.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            Attributes::NonResource {
                verb: s("verb"),
                path: s("path"),
            }
        } else {
            return Err(invalid(
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        };
        out["status"] = match self.allowed(&subject, &attrs) {
            Decision::Allow => {
                let reason = self
                    .policy()
                    .allow_reason(&subject, &attrs.as_request())
                    .unwrap_or_default();
                json!({"allowed": true, "reason": reason})
            }
            Decision::Deny { reason } if reason.is_empty() => json!({"allowed": false}),
            Decision::Deny { reason } => json!({"allowed": false, "evaluationError": reason}),
        };
        Ok(out)
    }
}

fn rules_review_status(review: opkit_rbac::RulesReview) -> Value {
    serde_json::to_value(review.into_status()).unwrap_or_else(|_| json!({"incomplete": true}))
}

fn parse_all<T: serde::de::DeserializeOwned>(entries: Vec<opkit_store::Entry>) -> Vec<T> {
    entries
        .into_iter()
        .filter_map(|e| match serde_json::from_slice(&e.value) {
            Ok(v) => Some(v),
            Err(err) => {
                tracing::warn!(key = %e.key, error = %err, "unreadable RBAC object ignored");
                None
            }
        })
        .collect()
}
