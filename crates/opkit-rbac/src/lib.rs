//! Kubernetes RBAC as a pure library.
//!
//! The embedded control plane must answer "may this user do this?" on every request, with the
//! exact semantics (and error texts) of kube-apiserver's RBAC authorizer, because the clients
//! talking to it — kubectl, helm, operators written against real clusters — depend on them. This
//! crate is that policy engine and nothing else: no storage, no HTTP, no clock. The API server
//! lists the Roles, ClusterRoles and their bindings, builds a [`Policy`] from them (an immutable
//! index, cheap to share behind an `Arc` and to rebuild when RBAC objects change), and asks it:
//!
//! - [`Policy::authorize`] for each request (and for SubjectAccessReviews),
//! - [`Policy::rules_for`] for SelfSubjectRulesReview,
//! - [`Policy::check_escalation`] before a Role, ClusterRole or binding is written,
//!
//! and renders denials with [`forbidden_message`] and [`escalation_message`]. [`aggregate`] is
//! what kube-controller-manager's clusterrole-aggregation controller computes, and
//! [`bootstrap_policy`] is the default policy a fresh cluster starts with.
//!
//! The facts come from upstream Kubernetes (`plugin/pkg/auth/authorizer/rbac`,
//! `pkg/registry/rbac/validation`, `component-helpers/auth/rbac/validation`, the bootstrap
//! policy); the code is our own.

mod aggregate;
mod bootstrap;
mod error;
mod message;
mod policy;
mod rules;
mod user;

pub use aggregate::aggregate;
pub use bootstrap::{
    AUTOUPDATE_ANNOTATION, BOOTSTRAPPING_LABEL, BOOTSTRAPPING_LABEL_VALUE, BootstrapPolicy,
    bootstrap_policy,
};
pub use error::{AggregationError, RuleError};
pub use message::{compact_string, escalation_message, forbidden_message};
pub use policy::{Escalation, Policy, RulesReview};
pub use rules::{breakdown_rule, covers, rule_allows};
pub use user::{
    ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS_USER, SERVICE_ACCOUNT_USERNAME_PREFIX,
    SERVICE_ACCOUNTS_GROUP, SERVICE_ACCOUNTS_GROUP_PREFIX, SYSTEM_MASTERS, UserInfo,
    is_service_account_username, parse_service_account_username, service_account_groups,
    service_account_username,
};

/// The API group of the RBAC kinds (`rbac.authorization.k8s.io`).
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// What is being attempted: the attributes kube-apiserver's authorizers see.
///
/// Empty strings in the optional fields are treated like `None`, as upstream treats an empty
/// namespace, subresource or name as absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// A request for an API resource (`/api/v1/...`, `/apis/G/V/...`).
    Resource {
        /// The verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
        /// `deletecollection`, or a special one such as `bind`, `escalate`, `impersonate`.
        verb: &'a str,
        /// The API group (`""` for the core group).
        group: &'a str,
        /// The API version; RBAC ignores it, the messages do not show it.
        version: &'a str,
        /// The resource (plural, lower case), e.g. `pods`.
        resource: &'a str,
        /// The subresource, e.g. `log` for `pods/log`.
        subresource: Option<&'a str>,
        /// The namespace, `None` for cluster-scoped resources and all-namespace lists.
        namespace: Option<&'a str>,
        /// The object's name, `None` for collection requests (`list`, `create`, ...).
        name: Option<&'a str>,
    },
    /// A request for any other path (`/healthz`, `/apis`, `/version`...).
    NonResource {
        /// The lower-cased HTTP method mapped to a verb (`get`, `post`, ...).
        verb: &'a str,
        /// The request path.
        path: &'a str,
    },
}

impl<'a> Request<'a> {
    /// The verb of the request.
    pub fn verb(&self) -> &'a str {
        match self {
            Request::Resource { verb, .. } | Request::NonResource { verb, .. } => verb,
        }
    }

    /// The namespace the request is scoped to, if any (never `Some("")`).
    pub fn namespace(&self) -> Option<&'a str> {
        match self {
            Request::Resource { namespace, .. } => non_empty(*namespace),
            Request::NonResource { .. } => None,
        }
    }
}

/// `Some("")` is "absent" everywhere in RBAC; normalise it once.
pub(crate) fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

/// The outcome of [`Policy::authorize`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Some rule the user holds allows the request.
    Allow,
    /// No rule allows it. `reason` is empty unless bindings that apply to the user could not be
    /// resolved (upstream then reports `RBAC: <errors>`, shown after the 403 message).
    Deny {
        /// Why, beyond "no rule allows it"; may be empty.
        reason: String,
    },
}

impl Decision {
    /// Whether the request is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}
