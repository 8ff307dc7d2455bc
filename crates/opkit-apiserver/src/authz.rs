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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use http::HeaderMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use opkit_rbac::{Decision, Policy};
use serde_json::{Value, json};

use crate::auth::User;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Resource;
use crate::request::Attributes;
use crate::server::ApiServer;

/// Storage keys of the RBAC kinds start with this.
pub(crate) const RBAC_KEY_PREFIX: &str = "/rbac.authorization.k8s.io/";
const RBAC_GROUP: &str = opkit_rbac::RBAC_GROUP;

/// The shared, lazily rebuilt RBAC policy.
#[derive(Default)]
pub struct Authorizer {
    epoch: AtomicU64,
    cached: Mutex<Option<(u64, Arc<Policy>)>>,
}

impl Authorizer {
    /// Marks the policy stale: an RBAC object was written.
    pub fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
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

impl ApiServer {
    /// The current RBAC policy (rebuilt from the store after RBAC writes).
    pub(crate) fn policy(&self) -> Arc<Policy> {
        let epoch = self.authz.epoch.load(Ordering::Acquire);
        let mut cached = match self.authz.cached.lock() {
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
        let list = |plural: &str| -> Vec<opkit_store::Entry> {
            let prefix = format!("{RBAC_KEY_PREFIX}{plural}/");
            self.store
                .list(&prefix, &opkit_store::ListOptions::default())
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

    /// Applies the `Impersonate-*` headers: checks that `user` may impersonate what they ask
    /// for and returns the impersonated user (or `user` when nothing is asked).
    pub(crate) fn impersonate(&self, user: Arc<User>, headers: &HeaderMap) -> ApiResult<Arc<User>> {
        let values = |name: &str| -> Vec<String> {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(|v| v.trim().to_string())
                .collect()
        };
        let name = values("impersonate-user").into_iter().next();
        let groups = values("impersonate-group");
        let uid = values("impersonate-uid").into_iter().next();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            if let Some(key) = header.as_str().strip_prefix("impersonate-extra-")
                && let Ok(v) = value.to_str()
            {
                let key = percent_decode(key);
                extra.entry(key).or_default().push(v.trim().to_string());
            }
        }
        let Some(name) = name else {
            if groups.is_empty() && uid.is_none() && extra.is_empty() {
                return Ok(user);
            }
            return Err(ApiError::bad_request(
                "requested impersonation of groups, a uid or extra fields without impersonating a user",
            ));
        };
        let check = |attrs: Attributes| self.authorize(&user, &attrs);
        let mut target = User {
            name: name.clone(),
            ..User::default()
        };
        if let Some((ns, sa)) = opkit_rbac::parse_service_account_username(&name) {
            check(Attributes::resource(
                "impersonate",
                "",
                "serviceaccounts",
                Some(ns),
                Some(sa),
            ))?;
            if groups.is_empty() {
                target.groups = opkit_rbac::service_account_groups(ns);
            }
        } else {
            check(Attributes::resource(
                "impersonate",
                "",
                "users",
                None,
                Some(&name),
            ))?;
        }
        for group in &groups {
            check(Attributes::resource(
                "impersonate",
                "",
                "groups",
                None,
                Some(group),
            ))?;
            if !target.groups.contains(group) {
                target.groups.push(group.clone());
            }
        }
        if let Some(uid) = uid {
            check(Attributes::resource(
                "impersonate",
                "authentication.k8s.io",
                "uids",
                None,
                Some(&uid),
            ))?;
            target.uid = uid;
        }
        for (key, vals) in &extra {
            for v in vals {
                let mut attrs = Attributes::resource(
                    "impersonate",
                    "authentication.k8s.io",
                    "userextras",
                    None,
                    Some(v),
                );
                if let Attributes::Resource { subresource, .. } = &mut attrs {
                    *subresource = Some(key.clone());
                }
                check(attrs)?;
            }
        }
        target.extra = extra;
        if target.name != opkit_rbac::ANONYMOUS_USER
            && !target.in_group(opkit_rbac::ALL_AUTHENTICATED)
        {
            target
                .groups
                .push(opkit_rbac::ALL_AUTHENTICATED.to_string());
        }
        Ok(Arc::new(target))
    }

    /// Escalation prevention for writes of Roles, ClusterRoles and their bindings: the writer
    /// must already hold every permission the object grants, or be allowed to `escalate`
    /// (roles) or `bind` (the referenced role).
    pub(crate) fn check_rbac_write(
        &self,
        user: &User,
        res: &Resource,
        ns: Option<&str>,
        obj: &Value,
    ) -> ApiResult<()> {
        if res.group != RBAC_GROUP || user.in_group(opkit_rbac::SYSTEM_MASTERS) {
            return Ok(());
        }
        let name = object::name(obj);
        let plural = res.plural.as_str();
        let decode = |what: &str| ApiError::bad_request(format!("cannot read the {what}"));
        let (scope, rules) = match plural {
            "roles" | "clusterroles" => {
                let escalate = Attributes::resource("escalate", RBAC_GROUP, plural, ns, Some(name));
                if self.allowed(user, &escalate).is_allowed() {
                    return Ok(());
                }
                if plural == "clusterroles"
                    && obj.get("aggregationRule").is_some_and(|a| !a.is_null())
                {
                    return Err(ApiError::forbidden(
                        RBAC_GROUP,
                        plural,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    ));
                }
                let rules: Vec<PolicyRule> = match obj.get("rules") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(r) => serde_json::from_value(r.clone()).map_err(|_| decode("rules"))?,
                };
                (ns, rules)
            }
            "rolebindings" | "clusterrolebindings" => {
                let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
                let kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
                let role_name = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
                let (role_plural, role_ns) = match kind {
                    "Role" => ("roles", ns),
                    _ => ("clusterroles", None),
                };
                // `bind` on the role, checked in the binding's namespace for RoleBindings.
                let bind_ns = if plural == "rolebindings" { ns } else { None };
                let bind =
                    Attributes::resource("bind", RBAC_GROUP, role_plural, bind_ns, Some(role_name));
                if self.allowed(user, &bind).is_allowed() {
                    return Ok(());
                }
                let parsed: k8s_openapi::api::rbac::v1::RoleRef =
                    serde_json::from_value(role_ref.clone()).map_err(|_| decode("roleRef"))?;
                let rules = self
                    .policy()
                    .role_ref_rules(role_ns, &parsed)
                    .map(<[PolicyRule]>::to_vec)
                    .map_err(|_| ApiError::not_found(RBAC_GROUP, role_plural, role_name))?;
                (bind_ns, rules)
            }
            _ => return Ok(()),
        };
        match self.policy().check_escalation(user, scope, &rules) {
            Ok(()) => Ok(()),
            Err(escalation) => Err(ApiError::forbidden_request(
                RBAC_GROUP,
                plural,
                name,
                escalation.message(&format!("{plural}.{RBAC_GROUP}"), name, user),
            )),
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

    /// Creates the default ClusterRoles and ClusterRoleBindings that are missing.
    pub(crate) async fn bootstrap_rbac(&self) -> ApiResult<()> {
        let snapshot = self.registry.snapshot();
        let policy = opkit_rbac::bootstrap_policy();
        let roles = policy
            .cluster_roles
            .into_iter()
            .map(|r| ("clusterroles", serde_json::to_value(r)));
        let bindings = policy
            .cluster_role_bindings
            .into_iter()
            .map(|b| ("clusterrolebindings", serde_json::to_value(b)));
        for (plural, obj) in roles.chain(bindings) {
            let obj = obj.map_err(ApiError::internal)?;
            let Some(res) = snapshot.get(RBAC_GROUP, "v1", plural).cloned() else {
                continue;
            };
            if self.store.get(&res.key(None, object::name(&obj))).is_some() {
                continue;
            }
            let (obj, _) = crate::admission::prepare_create(
                &res,
                None,
                obj,
                &crate::request::FieldValidation::Ignore.into(),
            )?;
            match self.insert(&res, None, obj, false).await {
                Ok(_) => {}
                Err(e) if e.is_already_exists() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn rules_review_status(review: opkit_rbac::RulesReview) -> Value {
    serde_json::to_value(review.into_status()).unwrap_or_else(|_| json!({"incomplete": true}))
}

/// Decodes `%XX` escapes of an `Impersonate-Extra-` header key.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_percent_decoded() {
        assert_eq!(percent_decode("scopes"), "scopes");
        assert_eq!(percent_decode("example.com%2fteam"), "example.com/team");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("%é"), "%é");
    }
}
