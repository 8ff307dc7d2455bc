//! RBAC objects: escalation prevention on writes of Roles, ClusterRoles and their bindings,
//! and a fresh authorization policy after every committed change.

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

use super::Strategy;
use crate::api::Api;
use crate::authz::Authorizer;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Resource;
use crate::request::{Actor, Attributes, User};

const RBAC_GROUP: &str = opkit_rbac::RBAC_GROUP;

/// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings.
pub(crate) struct Rbac;

impl Strategy for Rbac {
    fn validate_write(
        &self,
        api: &Api,
        actor: &Actor,
        res: &Resource,
        ns: Option<&str>,
        obj: &Value,
    ) -> ApiResult<()> {
        // The server's own writes grant nothing it does not hold already.
        match actor {
            Actor::User { user, .. } => check_write(&api.authz, user, res, ns, obj),
            Actor::System => Ok(()),
        }
    }

    fn committed(&self, api: &Api, _obj: &Value, _deleted: bool) {
        api.authz.invalidate();
    }
}

/// Escalation prevention for writes of Roles, ClusterRoles and their bindings: the writer
/// must already hold every permission the object grants, or be allowed to `escalate`
/// (roles) or `bind` (the referenced role).
fn check_write(
    authz: &Authorizer,
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
            if authz.allowed(user, &escalate).is_allowed() {
                return Ok(());
            }
            if plural == "clusterroles" && obj.get("aggregationRule").is_some_and(|a| !a.is_null())
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
            if authz.allowed(user, &bind).is_allowed() {
                return Ok(());
            }
            let parsed: k8s_openapi::api::rbac::v1::RoleRef =
                serde_json::from_value(role_ref.clone()).map_err(|_| decode("roleRef"))?;
            let rules = authz
                .policy()
                .role_ref_rules(role_ns, &parsed)
                .map(<[PolicyRule]>::to_vec)
                .map_err(|_| ApiError::not_found(RBAC_GROUP, role_plural, role_name))?;
            (bind_ns, rules)
        }
        _ => return Ok(()),
    };
    match authz.policy().check_escalation(user, scope, &rules) {
        Ok(()) => Ok(()),
        Err(escalation) => Err(ApiError::forbidden_request(
            RBAC_GROUP,
            plural,
            name,
            escalation.message(&format!("{plural}.{RBAC_GROUP}"), name, user),
        )),
    }
}
